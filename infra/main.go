// Command infra is the CDK app of Vestibule: `cdk synth` and `cdk deploy` run it (see cdk.json).
// Deploy-time settings come from the CDK context; docs/DEPLOY.md lists them.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/stack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	settings, err := stack.FromContext(app.Node())
	if err != nil {
		fmt.Fprintln(os.Stderr, "vestibule:", err)
		os.Exit(1)
	}
	props := &stack.Props{Settings: settings}
	props.Description = jsii.String("Vestibule: a serverless virtual waiting room")
	if settings.WAF || settings.APICertificateArn != "" || settings.TwoRegions() {
		// A CloudFront web ACL must live in us-east-1, the API's certificate in the stack's
		// region, and a two-region stack must know its region from the other's, so with any of
		// them the stack is bound to the region of the deploying credentials (no lookup: the CLI
		// passes it) and the stack checks it; it refuses an unknown region.
		props.Env = &awscdk.Environment{Region: jsii.String(os.Getenv("CDK_DEFAULT_REGION"))}
		if *props.Env.Region == "" {
			props.Env = nil
		}
	}
	// The stage names the stack ("Vestibule", "Vestibule-staging"), so two copies can live
	// in one account and region.
	stack.New(app, settings.StackName(), props)
	app.Synth(nil)
}
