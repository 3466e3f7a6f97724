package stack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// notifyFunction returns the notify function's logical id, resource and its role's statements.
func notifyFunction(t *testing.T, f fixture) (string, map[string]any, []map[string]any) {
	t.Helper()
	for id, r := range f.ofType("AWS::Lambda::Function") {
		env, _ := props(r)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if _, ok := vars[config.EnvNoticeSecretARN]; ok && vars[config.EnvKeysObject] == nil {
			role, _ := props(r)["Role"].(map[string]any)
			ga, _ := role["Fn::GetAtt"].([]any)
			return id, r, roleStatements(f, ga[0].(string))
		}
	}
	return "", nil, nil
}

// The notices' part of the default stack: the notify function outside the VPC, with the notice
// secret, the API's URL and the waiting page's; its role may read the notice secret and no other,
// call the two admin routes of notices and no other, and send no email (no sender); a rule on
// the bus sends it the ticks that count notices due; the API functions offer push only.
func TestNoticesOfTheDefaultStack(t *testing.T) {
	f := defaultStack(t)
	id, fn, sts := notifyFunction(t, f)
	if id == "" {
		t.Fatal("no notify function")
	}
	p := props(fn)
	if p["VpcConfig"] != nil || p["Runtime"] != "provided.al2023" {
		t.Errorf("notify: in a VPC %v, runtime %v", p["VpcConfig"], p["Runtime"])
	}
	vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	secret, _ := json.Marshal(vars[config.EnvNoticeSecretARN])
	if !strings.Contains(string(secret), `"Ref":"NoticeSecret`) || vars[config.EnvNoticeFrom] != "" {
		t.Errorf("notify's secret %s, sender %v", secret, vars[config.EnvNoticeFrom])
	}
	for _, v := range []string{config.EnvNoticeAPIURL, config.EnvNoticePageURL} {
		if b, _ := json.Marshal(vars[v]); !strings.Contains(string(b), "https://") {
			t.Errorf("%s = %s", v, b)
		}
	}
	var invoke, read bool
	for _, s := range sts {
		actions, _ := json.Marshal(s["Action"])
		res, _ := json.Marshal(s["Resource"])
		switch {
		case strings.Contains(string(actions), "execute-api"):
			invoke = true
			if !strings.Contains(string(res), "/POST/api/admin/rooms/*/notices/take") || !strings.Contains(string(res), "/POST/api/admin/rooms/*/notices/ack") ||
				strings.Count(string(res), "execute-api") != 2 {
				t.Errorf("notify may invoke %s", res)
			}
		case strings.Contains(string(actions), "secretsmanager:"):
			read = true
			if !strings.Contains(string(res), `"Ref":"NoticeSecret`) || strings.Contains(string(res), "TicketSecret") ||
				strings.Contains(string(res), "EntryKeySecret") || strings.Contains(string(res), "OriginSecret") {
				t.Errorf("notify may read the secrets %s", res)
			}
		case strings.Contains(string(actions), "ses:"):
			t.Errorf("notify may send email without a sender: %s on %s", actions, res)
		case strings.Contains(string(actions), "logs:"), strings.Contains(string(actions), "sqs:"):
		default:
			t.Errorf("notify may %s on %s", actions, res)
		}
	}
	if !invoke || !read {
		t.Errorf("notify: invoke %v, read the secret %v", invoke, read)
	}
	f.has(t, "AWS::Events::Rule", map[string]any{"EventPattern": map[string]any{
		"source": []any{"vestibule.admission"}, "detail-type": []any{"admission.tick"},
		"detail": map[string]any{"notices": []any{map[string]any{"numeric": []any{">", 0}}}},
	}})
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[config.EnvNoticeChannels] != "push" {
			t.Errorf("%s: %s = %v, want push", name, config.EnvNoticeChannels, vars[config.EnvNoticeChannels])
		}
	}
	// The key sync reads the notice secret (to copy its public keys), the API functions do not.
	_, ks := keySyncFunction(t, f)
	ksVars := props(ks)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if b, _ := json.Marshal(ksVars[config.EnvNoticeSecretARN]); !strings.Contains(string(b), "NoticeSecret") {
		t.Errorf("keysync's %s = %s", config.EnvNoticeSecretARN, b)
	}
	for _, r := range f.ofType("Custom::VestibuleKeySync") {
		if b, _ := json.Marshal(props(r)["NoticeSecretArn"]); !strings.Contains(string(b), `"Ref":"NoticeSecret`) {
			t.Errorf("the key sync's resource: NoticeSecretArn %s", b)
		}
	}
}

// With a sender, the API functions offer email too, the stack creates the SES identity, and the
// notify function may send email from it and from nothing else. A sender that is not a plain
// address, or an identity the sender does not fall under, is refused.
func TestNoticesWithASender(t *testing.T) {
	f := synth(t, "", false, func(s *stack.Settings) {
		s.NoticeSender = "turns@tickets.example.com"
		s.NoticeIdentity = "example.com"
	})
	f.has(t, "AWS::SES::EmailIdentity", map[string]any{"EmailIdentity": "example.com"})
	_, fn, sts := notifyFunction(t, f)
	vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if vars[config.EnvNoticeFrom] != "turns@tickets.example.com" {
		t.Errorf("sender %v", vars[config.EnvNoticeFrom])
	}
	var ses bool
	for _, s := range sts {
		actions, _ := json.Marshal(s["Action"])
		if strings.Contains(string(actions), "ses:") {
			res, _ := json.Marshal(s["Resource"])
			ses = string(actions) == `"ses:SendEmail"` && strings.Contains(string(res), "identity/") && strings.Contains(string(res), "NoticeIdentity")
			if !ses {
				t.Errorf("notify may %s on %s", actions, res)
			}
		}
	}
	if !ses {
		t.Error("notify may not send from the identity")
	}
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[config.EnvNoticeChannels] != "push,email" {
			t.Errorf("%s: %s = %v", name, config.EnvNoticeChannels, vars[config.EnvNoticeChannels])
		}
	}
	for _, bad := range []stack.Settings{
		{NoticeSender: "Turns <turns@example.com>"},
		{NoticeSender: "turns@example.com", NoticeIdentity: "other.example"},
		{NoticeSender: "turns@example.com", NoticeIdentity: "else@example.com"},
		{NoticeIdentity: "example.com"},
	} {
		if err := stack.CheckNoticeSettings(bad); err == nil {
			t.Errorf("%+v taken", bad)
		}
	}
	for _, good := range []stack.Settings{{}, {NoticeSender: "turns@example.com"}, {NoticeSender: "turns@mail.example.com", NoticeIdentity: "example.com"}} {
		if err := stack.CheckNoticeSettings(good); err != nil {
			t.Errorf("%+v: %v", good, err)
		}
	}
}

// notices=false leaves every part of them out, and so does origin mTLS on the API (only
// CloudFront gets past its handshake: the function could not take the notices), with a warning.
func TestNoticesOff(t *testing.T) {
	f := synth(t, "", false, func(s *stack.Settings) { s.Notices = false })
	if id, _, _ := notifyFunction(t, f); id != "" {
		t.Errorf("a notify function with notices off: %s", id)
	}
	for id := range f.ofType("AWS::Events::Rule") {
		if strings.HasPrefix(id, "NoticeRule") {
			t.Errorf("a notice rule with notices off: %s", id)
		}
	}
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[config.EnvNoticeChannels] != "" {
			t.Errorf("%s: %s = %v with notices off", name, config.EnvNoticeChannels, vars[config.EnvNoticeChannels])
		}
	}
}
