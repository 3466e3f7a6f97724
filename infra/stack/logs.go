package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// vpcNetworkActions are the network-interface permissions of AWS's
// AWSLambdaVPCAccessExecutionRole: Lambda creates and removes a function's interfaces in its
// subnets with the function's role. EC2 takes them on "Resource": "*" only.
var vpcNetworkActions = []string{
	"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
	"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
}

// ownLogsOnly takes from fn's role the AWS managed policies the CDK gives a function
// (AWSLambdaBasicExecutionRole and, in a VPC, AWSLambdaVPCAccessExecutionRole), which allow
// logs:PutLogEvents on every log group of the account, and grants instead what they are for:
// writing fn's own log group, and in a VPC the network interfaces (vpcNetworkActions). The
// admission and order events travel in the log groups of EventFunctions to the bus, so no
// function may write another's: a flaw in status could otherwise forge an admission in admit's
// log group (TestEachFunctionWritesOnlyItsOwnLogGroup).
func ownLogsOnly(fn awslambda.Function, logs awslogs.ILogGroup, inVPC bool) {
	role, ok := fn.Role().Node().DefaultChild().(awsiam.CfnRole)
	if !ok {
		panic("stack: " + *fn.Node().Id() + " has no role resource")
	}
	role.SetManagedPolicyArns(nil)
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	if inVPC {
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(vpcNetworkActions...),
			Resources: jsii.Strings("*"),
		}))
	}
}
