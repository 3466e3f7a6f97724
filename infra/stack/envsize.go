package stack

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/config"
)

// LambdaEnvironmentLimit is the most bytes Lambda takes for all of a function's environment
// variables, names and values together: a larger one fails the deploy (cfn-lint's E3697), long
// after synthesis said nothing.
const LambdaEnvironmentLimit = 4096

// tokenBytes is what a value CloudFormation resolves at deploy time is counted as: more than a
// bucket name (at most 63) or a cache endpoint (about 70).
const tokenBytes = 100

// cdkToken is how an unresolved value shows in a Go string at synth time.
var cdkToken = regexp.MustCompile(`\$\{Token\[[^\]]*\]\}`)

// EnvironmentSize estimates the bytes Lambda counts for an environment given as the template
// holds it: each name and value, with every value CloudFormation resolves at deploy time (a Ref,
// a GetAtt) counted as tokenBytes, and the literal parts of an Fn::Join as they are.
func EnvironmentSize(vars map[string]any) int {
	n := 0
	for name, v := range vars {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case map[string]any:
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			parts, _ := join[1].([]any)
			n := 0
			for _, p := range parts {
				n += valueSize(p)
			}
			return n
		}
	}
	return tokenBytes
}

// checkEnvironment fails the synthesis, with the sizes, when the functions' environment would
// be over LambdaEnvironmentLimit: a long roomDefaults (a page message in several languages) is
// what can make it so.
func checkEnvironment(st awscdk.Stack, env map[string]*string) {
	n := 0
	for name, v := range env {
		s := *v
		tokens := len(cdkToken.FindAllStringIndex(s, -1))
		n += len(name) + len(cdkToken.ReplaceAllString(s, "")) + tokens*tokenBytes
	}
	if n <= LambdaEnvironmentLimit {
		return
	}
	awscdk.Annotations_Of(st).AddError(jsii.String(fmt.Sprintf(
		"%s: the environment of the functions is about %d bytes, over Lambda's 4 KB (%d): %s is %d bytes of it; shorten %s (a room's page text can be set per room instead)",
		ErrBadSetting, n, LambdaEnvironmentLimit, config.EnvDefaultRoomConfig, len(*env[config.EnvDefaultRoomConfig]), CtxRoomDefaults)))
}
