package stack_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/vestibule-dev/vestibule/infra/stack"
)

func TestSettingsFromContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     map[string]any
		check   func(stack.Settings) bool
		wantErr bool
	}{
		{"defaults", nil, func(s stack.Settings) bool { return reflect.DeepEqual(s, stack.DefaultSettings()) }, false},
		{"nodes and waf from the command line", map[string]any{"cache": "nodes", "waf": "true", "wafRateLimit": "500"},
			func(s stack.Settings) bool { return s.Cache == stack.CacheNodes && s.WAF && s.WAFRateLimit == 500 }, false},
		{"room defaults overlay, as JSON text", map[string]any{"roomDefaults": `{"maxActive":10,"originUrl":"https://x.example/"}`},
			func(s stack.Settings) bool {
				return s.RoomDefaults.MaxActive == 10 && s.RoomDefaults.OriginURL == "https://x.example/" &&
					s.RoomDefaults.AdmitPerMinute == stack.DefaultRoomDefaults().AdmitPerMinute
			}, false},
		{"room defaults as a cdk.json object", map[string]any{"roomDefaults": map[string]any{"mode": "auto"}},
			func(s stack.Settings) bool { return s.RoomDefaults.Mode == "auto" }, false},
		{"log retention", map[string]any{"logRetentionDays": 90}, func(s stack.Settings) bool { return s.LogRetentionDays == 90 }, false},
		{"log sample", map[string]any{"logSample": "0.1"}, func(s stack.Settings) bool { return s.LogSample == 0.1 }, false},
		{"log sample none, from cdk.json", map[string]any{"logSample": 0}, func(s stack.Settings) bool { return s.LogSample == 0 }, false},
		{"log sample above 1", map[string]any{"logSample": "5"}, nil, true},
		{"log sample a percentage", map[string]any{"logSample": "1%"}, nil, true},
		{"unknown cache", map[string]any{"cache": "memcached"}, nil, true},
		{"waf not a bool", map[string]any{"waf": "maybe"}, nil, true},
		{"retention CloudWatch refuses", map[string]any{"logRetentionDays": "31"}, nil, true},
		{"room defaults typo", map[string]any{"roomDefaults": `{"maxActiv":10}`}, nil, true},
		{"room defaults bad mode", map[string]any{"roomDefaults": `{"mode":"fast"}`}, nil, true},
		// the engine's ranges, not a weaker copy: every PUT leaving the field out would get 400
		{"room defaults out of the engine's range", map[string]any{"roomDefaults": `{"sessionTTLSeconds":5}`}, nil, true},
		{"negative rate", map[string]any{"apiRateLimit": "-1"}, nil, true},
		{"stage names the stack", map[string]any{"stage": "staging"},
			func(s stack.Settings) bool { return s.Stage == "staging" && s.StackName() == "Vestibule-staging" }, false},
		{"no stage is the stack Vestibule", map[string]any{}, func(s stack.Settings) bool { return s.StackName() == "Vestibule" }, false},
		{"stage with a capital", map[string]any{"stage": "Prod"}, nil, true},
		{"stage too long for the account-wide names", map[string]any{"stage": "a23456789012345678901"}, nil, true},
		{"price class", map[string]any{"priceClass": "200"}, func(s stack.Settings) bool { return s.PriceClass == "200" }, false},
		{"unknown price class", map[string]any{"priceClass": "50"}, nil, true},
		{"origin secret version", map[string]any{"originSecretVersion": "0f1e2d3c-aaaa"}, func(s stack.Settings) bool { return s.OriginSecretVersion == "0f1e2d3c-aaaa" }, false},
		{"origin secret version that would break the reference", map[string]any{"originSecretVersion": "x:y"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// GIVEN an app with this context
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tt.ctx, Outdir: jsii.String(t.TempDir())})
			// WHEN the settings are read
			s, err := stack.FromContext(app.Node())
			// THEN they are what the context says, or a bad-setting error
			if tt.wantErr {
				if !errors.Is(err, stack.ErrBadSetting) {
					t.Fatalf("err = %v, want ErrBadSetting", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s) {
				t.Errorf("settings %+v", s)
			}
		})
	}
}

func TestAdmitReservedConcurrencyFromContext(t *testing.T) {
	for _, c := range []struct {
		value any
		want  int
		ok    bool
	}{{nil, 0, true}, {"1", 1, true}, {"0", 0, true}, {float64(2), 2, true}, {"-1", 0, false}, {"one", 0, false}, {"1.5", 0, false}} {
		// GIVEN the context value WHEN the settings are read
		ctx := map[string]any{}
		if c.value != nil {
			ctx[stack.CtxAdmitReserved] = c.value
		}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		s, err := stack.FromContext(app.Node())
		// THEN a whole number from 0 up is taken, anything else refused
		if c.ok && (err != nil || s.AdmitReservedConcurrency != c.want) {
			t.Errorf("%v: %d %v, want %d", c.value, s.AdmitReservedConcurrency, err, c.want)
		}
		if !c.ok && !errors.Is(err, stack.ErrBadSetting) {
			t.Errorf("%v: err %v, want ErrBadSetting", c.value, err)
		}
	}
}
