package notice

// words are a notice's texts in one language. {title} is the room's title
// (its page setting's, in the visitor's language) or "the waiting room";
// {minutes} how long the turn is kept. Each language says the same: the turn
// is kept for a while, the link goes back to the waiting room, it works in
// the browser where the visitor joined, and it carries no ticket.
type words struct {
	Room    string // the room when it has no title: "the waiting room"
	Title   string // the push notification's title and the email's heading
	Body    string // the push notification's body
	Subject string // the email's subject
	Lead    string // the email's first paragraph
	Button  string // the link's text
	Note    string // where the link works
	Why     string // why the email came, and what was kept
}

// texts are the notices' words by language (Languages), English first.
var texts = map[string]words{
	"en": {
		Room:    "the waiting room",
		Title:   "It's your turn",
		Body:    "Your turn at {title} is kept for {minutes} minutes. Open the waiting room to go in.",
		Subject: "It's your turn: {title}",
		Lead:    "Your turn has come at {title}. It is kept for you for {minutes} minutes: go back to the waiting room and it takes you in.",
		Button:  "Go back to the waiting room",
		Note:    "Open the link in the browser where you joined the line: that browser holds your place. The link itself carries no ticket, so forwarding it gives nobody your turn.",
		Why:     "You asked the waiting room to tell you at this address when it was your turn. The address was used for this message only and has been deleted.",
	},
	"ko": {
		Room:    "대기실",
		Title:   "차례가 되었습니다",
		Body:    "{title}의 차례가 {minutes}분 동안 유지됩니다. 대기실을 열어 입장하세요.",
		Subject: "차례가 되었습니다: {title}",
		Lead:    "{title}에서 차례가 되었습니다. {minutes}분 동안 차례를 맡아 둡니다. 대기실로 돌아가시면 바로 입장합니다.",
		Button:  "대기실로 돌아가기",
		Note:    "줄을 선 브라우저에서 링크를 여세요. 그 브라우저가 자리를 기억하고 있습니다. 링크 자체에는 입장권이 없으므로 전달해도 다른 사람이 차례를 쓸 수 없습니다.",
		Why:     "차례가 되면 이 주소로 알려 달라고 요청하셨습니다. 주소는 이 메시지에만 쓰였고 삭제되었습니다.",
	},
	"ja": {
		Room:    "待合室",
		Title:   "順番が来ました",
		Body:    "{title}の順番は{minutes}分間確保されています。待合室を開いて入場してください。",
		Subject: "順番が来ました：{title}",
		Lead:    "{title}の順番が来ました。{minutes}分間お取り置きしています。待合室に戻ると、そのまま入場できます。",
		Button:  "待合室に戻る",
		Note:    "列に並んだブラウザーでリンクを開いてください。そのブラウザーが順番を保持しています。リンク自体に入場券は含まれないため、転送しても他の人が順番を使うことはできません。",
		Why:     "順番が来たらこのアドレスに知らせるよう、待合室に依頼されました。アドレスはこのメッセージにのみ使われ、削除されました。",
	},
	"zh-Hans": {
		Room:    "等候室",
		Title:   "轮到您了",
		Body:    "您在{title}的名额将保留{minutes}分钟。请打开等候室进入。",
		Subject: "轮到您了：{title}",
		Lead:    "{title}轮到您了。名额为您保留{minutes}分钟：回到等候室即可进入。",
		Button:  "返回等候室",
		Note:    "请在您排队时使用的浏览器中打开链接：该浏览器保存着您的位置。链接本身不含门票，转发它不会让别人用掉您的名额。",
		Why:     "您曾请等候室在轮到您时通过此地址通知您。该地址仅用于这条消息，现已删除。",
	},
	"es": {
		Room:    "la sala de espera",
		Title:   "Es tu turno",
		Body:    "Tu turno en {title} se guarda durante {minutes} minutos. Abre la sala de espera para entrar.",
		Subject: "Es tu turno: {title}",
		Lead:    "Ha llegado tu turno en {title}. Te lo guardamos durante {minutes} minutos: vuelve a la sala de espera y te hará pasar.",
		Button:  "Volver a la sala de espera",
		Note:    "Abre el enlace en el navegador con el que hiciste la fila: ese navegador guarda tu lugar. El enlace no lleva ninguna entrada, así que reenviarlo no le da tu turno a nadie.",
		Why:     "Pediste a la sala de espera que te avisara en esta dirección cuando fuera tu turno. La dirección se usó solo para este mensaje y se ha borrado.",
	},
	"fr": {
		Room:    "la salle d'attente",
		Title:   "C'est votre tour",
		Body:    "Votre tour pour {title} est gardé pendant {minutes} minutes. Ouvrez la salle d'attente pour entrer.",
		Subject: "C'est votre tour : {title}",
		Lead:    "Votre tour est venu pour {title}. Il vous est gardé pendant {minutes} minutes : revenez à la salle d'attente, elle vous fera entrer.",
		Button:  "Revenir à la salle d'attente",
		Note:    "Ouvrez le lien dans le navigateur où vous avez rejoint la file : c'est lui qui garde votre place. Le lien ne contient aucun billet : le transférer ne donne votre tour à personne.",
		Why:     "Vous avez demandé à la salle d'attente de vous prévenir à cette adresse quand ce serait votre tour. L'adresse n'a servi qu'à ce message et a été effacée.",
	},
	"de": {
		Room:    "der Warteraum",
		Title:   "Sie sind an der Reihe",
		Body:    "Ihr Platz bei {title} wird {minutes} Minuten lang freigehalten. Öffnen Sie den Warteraum, um einzutreten.",
		Subject: "Sie sind an der Reihe: {title}",
		Lead:    "Sie sind bei {title} an der Reihe. Ihr Platz wird {minutes} Minuten lang für Sie freigehalten: Kehren Sie in den Warteraum zurück, er lässt Sie hinein.",
		Button:  "Zurück zum Warteraum",
		Note:    "Öffnen Sie den Link in dem Browser, mit dem Sie sich angestellt haben: Er hält Ihren Platz. Der Link selbst enthält kein Ticket; wer ihn weitergeleitet bekommt, kann Ihren Platz nicht nutzen.",
		Why:     "Sie haben den Warteraum gebeten, Sie unter dieser Adresse zu benachrichtigen, sobald Sie an der Reihe sind. Die Adresse wurde nur für diese Nachricht verwendet und ist gelöscht.",
	},
	"pt-BR": {
		Room:    "a sala de espera",
		Title:   "Chegou a sua vez",
		Body:    "Sua vez em {title} fica guardada por {minutes} minutos. Abra a sala de espera para entrar.",
		Subject: "Chegou a sua vez: {title}",
		Lead:    "Chegou a sua vez em {title}. Ela fica guardada para você por {minutes} minutos: volte à sala de espera e ela deixa você entrar.",
		Button:  "Voltar à sala de espera",
		Note:    "Abra o link no navegador em que você entrou na fila: é ele que guarda o seu lugar. O link não leva ingresso nenhum, então encaminhá-lo não dá a sua vez a ninguém.",
		Why:     "Você pediu à sala de espera que avisasse neste endereço quando chegasse a sua vez. O endereço foi usado só para esta mensagem e já foi apagado.",
	},
}
