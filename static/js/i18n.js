// Korean and English texts. The language comes from the page's address
// (&lang=ko), then a remembered choice, then navigator.language; {n}-style
// placeholders are filled by t().
const texts = {
  en: {
    skip: 'Skip to content',
    loading: 'Joining the line…',
    room: 'Waiting room: {room}',
    noRoom: 'No waiting room named',
    noRoomLead: 'The address should name a room, for example ?room=demo.',
    unknownRoom: 'This waiting room does not exist',
    unknownRoomLead: 'Check the link you followed.',
    waitingTitle: "You're in line",
    waitingLead: "When it's your turn we'll take you to the site automatically. Keep this page open; refreshing it keeps your place.",
    prequeueTitle: 'The line opens soon',
    prequeueLead: "You're registered. When the line opens, everyone here gets a place in random order, so there's no need to hurry or refresh.",
    pausedTitle: 'The line is paused',
    pausedLead: "Nobody is being let in right now. You keep your place; we'll continue automatically.",
    closedTitle: 'This line is closed',
    closedLead: 'The waiting room is not letting anyone in. This page checks again by itself.',
    expiredTitle: 'Your place has expired',
    expiredLead: 'Your turn passed or the page was away too long. You can join the line again.',
    leftTitle: 'You left the line',
    leftLead: 'Your place was given up. You can join again at the end of the line.',
    admittedTitle: "It's your turn",
    admittedLead: 'Taking you to the site now…',
    admittedOther: 'Your turn is being used in another tab or window of this browser.',
    endedTitle: 'Your visit has ended',
    endedLead: 'Your turn was used. To come back, join the line again.',
    errorTitle: 'Something went wrong',
    errorLead: 'The waiting room could not understand the request.',
    position: 'Your place in line',
    ahead: 'Ahead of you',
    waiting: 'Waiting in total',
    eta: 'Estimated wait',
    opensIn: 'Opens in',
    opensAt: 'Opens at {time}',
    openingNow: 'Opening now…',
    findingPlace: 'Finding your place…',
    goNow: 'Continue now',
    rejoin: 'Join the line again',
    leave: 'Leave the line',
    leaveConfirm: 'Leave the line? You will lose your place.',
    reconnecting: 'Reconnecting… your place is kept.',
    updated: 'Updated {time}',
    updatedCounting: 'Checked at {time}. Until the next check the numbers count down at the pace people are let in: about {rate} a minute.',
    updatedCountingSlow: 'Checked at {time}. Until the next check the numbers count down at the pace people are let in.',
    about: 'about',
    notifyMe: "Notify me when it's my turn",
    notifyOn: "You'll get a notification when it's your turn, even with this tab in the background.",
    notifyBlocked: 'Notifications are blocked for this site. Keep this tab where you can see it.',
    notifyBody: 'Come back to the waiting room to go to the site.',
    etaNow: 'Any moment',
    etaUnderMinute: 'Under 1 min',
    etaMinutes: '{lo}–{hi} min',
    etaHours: '{lo}–{hi} hours',
    etaLong: 'Over {hi} hours',
    sayPosition: 'You are number {n} in line. Estimated wait: {eta}.',
    sayPositionAbout: 'You are about number {n} in line. Estimated wait: {eta}.',
    sayPrequeue: 'The line opens in {eta}.',
    drawRef: 'Your lottery reference: {visitor}, draw {draw}. After the opening anyone can check that the draw was fair: vestibule verify-draw --room {room} --visitor {visitor}',
    logo: 'Event logo',
    other: '한국어',
    otherLang: 'ko',
  },
  ko: {
    skip: '본문으로 건너뛰기',
    loading: '대기열에 들어가는 중…',
    room: '대기실: {room}',
    noRoom: '대기실 이름이 없습니다',
    noRoomLead: '주소에 대기실 이름이 있어야 합니다. 예: ?room=demo',
    unknownRoom: '없는 대기실입니다',
    unknownRoomLead: '들어온 링크를 확인해 주세요.',
    waitingTitle: '대기열에 들어왔습니다',
    waitingLead: '순서가 되면 자동으로 사이트로 이동합니다. 이 페이지를 열어 두세요. 새로고침해도 순서는 유지됩니다.',
    prequeueTitle: '곧 대기열이 열립니다',
    prequeueLead: '등록되었습니다. 대기열이 열리면 지금 계신 분들의 순서가 무작위로 정해지니 서두르거나 새로고침하지 않으셔도 됩니다.',
    pausedTitle: '대기열이 잠시 멈췄습니다',
    pausedLead: '지금은 입장이 멈춰 있습니다. 순서는 그대로 유지되며 자동으로 이어집니다.',
    closedTitle: '대기열이 닫혔습니다',
    closedLead: '지금은 입장할 수 없습니다. 이 페이지가 스스로 다시 확인합니다.',
    expiredTitle: '순서가 만료되었습니다',
    expiredLead: '순서가 지났거나 페이지를 너무 오래 떠나 있었습니다. 다시 줄을 설 수 있습니다.',
    leftTitle: '대기열에서 나왔습니다',
    leftLead: '순서를 포기했습니다. 다시 들어가면 맨 뒤에 서게 됩니다.',
    admittedTitle: '입장 차례입니다',
    admittedLead: '지금 사이트로 이동합니다…',
    admittedOther: '이 브라우저의 다른 탭이나 창에서 입장하고 있습니다.',
    endedTitle: '방문이 끝났습니다',
    endedLead: '입장 차례를 이미 사용했습니다. 다시 들어오시려면 줄을 다시 서 주세요.',
    errorTitle: '문제가 생겼습니다',
    errorLead: '대기실이 요청을 처리하지 못했습니다.',
    position: '내 순서',
    ahead: '내 앞 인원',
    waiting: '전체 대기 인원',
    eta: '예상 대기 시간',
    opensIn: '열리기까지',
    opensAt: '{time}에 열립니다',
    openingNow: '지금 열리는 중…',
    findingPlace: '내 순서를 찾는 중…',
    goNow: '지금 이동',
    rejoin: '다시 줄 서기',
    leave: '대기열에서 나가기',
    leaveConfirm: '대기열에서 나가시겠습니까? 순서를 잃게 됩니다.',
    reconnecting: '다시 연결하는 중… 순서는 유지됩니다.',
    updated: '{time} 갱신',
    updatedCounting: '{time}에 확인했습니다. 다음 확인까지는 입장 속도(1분에 약 {rate}명)에 맞춰 숫자가 줄어듭니다.',
    updatedCountingSlow: '{time}에 확인했습니다. 다음 확인까지는 입장 속도에 맞춰 숫자가 줄어듭니다.',
    about: '약',
    notifyMe: '차례가 되면 알림 받기',
    notifyOn: '차례가 되면 알림을 보내 드립니다. 이 탭이 뒤에 있어도 괜찮습니다.',
    notifyBlocked: '이 사이트의 알림이 차단되어 있습니다. 이 탭을 보이는 곳에 두세요.',
    notifyBody: '대기실로 돌아오시면 사이트로 이동합니다.',
    etaNow: '곧 입장',
    etaUnderMinute: '1분 이내',
    etaMinutes: '{lo}~{hi}분',
    etaHours: '{lo}~{hi}시간',
    etaLong: '{hi}시간 이상',
    sayPosition: '현재 {n}번째입니다. 예상 대기 시간은 {eta}입니다.',
    sayPositionAbout: '현재 약 {n}번째입니다. 예상 대기 시간은 {eta}입니다.',
    sayPrequeue: '대기열이 {eta} 후에 열립니다.',
    drawRef: '내 추첨 확인 번호: {visitor}, 추첨값 {draw}. 대기열이 열린 뒤 누구나 추첨이 공정했는지 확인할 수 있습니다: vestibule verify-draw --room {room} --visitor {visitor}',
    logo: '행사 로고',
    other: 'English',
    otherLang: 'en',
  },
};

const KEY = 'vestibule:lang';
let lang = pick();
let picked = '';   // the language picked with the switch on this page

// fromURL is the language the page's address asks for (?lang=ko, or a tag
// such as ko-KR), when the page has it.
function fromURL() {
  let l = '';
  try { l = String(new URLSearchParams(location.search).get('lang') || '').toLowerCase(); } catch { /* no address */ }
  if (texts[l]) return l;
  const base = l.split('-')[0];
  return texts[base] ? base : '';
}

function pick() {
  const asked = fromURL();
  if (asked) return asked;
  let saved = null;
  try { saved = localStorage.getItem(KEY); } catch { /* storage off: use the browser's language */ }
  if (saved && texts[saved]) return saved;
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
  for (const l of langs) {
    const base = String(l).toLowerCase().split('-')[0];
    if (texts[base]) return base;
  }
  return 'en';
}

export function current() { return lang; }

// preferred lists the visitor's languages, best first, for texts that come in
// more languages than the page's own (the room's page setting): the language
// picked with the switch, then the browser's, then the page's current one.
export function preferred() {
  let saved = null;
  try { saved = localStorage.getItem(KEY); } catch { /* storage off */ }
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
  return [...new Set([picked, fromURL(), saved, ...langs, lang].filter(Boolean).map(l => String(l).toLowerCase()))];
}

export function set(l) {
  if (!texts[l]) return;
  lang = picked = l;
  try { localStorage.setItem(KEY, l); } catch { /* the choice lasts this page only */ }
}

export function t(key, vars = {}) {
  const s = texts[lang][key] ?? texts.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (_, k) => (k in vars ? String(vars[k]) : ''));
}
