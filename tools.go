//go:build tools

// This file pins the modules the project's packages use while they are being
// written, so go.mod changes in one place. Remove an import once real code uses it.
package tools

import (
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/aws/aws-cdk-go/awscdk/v2"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	_ "github.com/aws/aws-lambda-go/events"
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	_ "github.com/aws/constructs-go/constructs/v10"
	_ "github.com/aws/jsii-runtime-go"
	_ "github.com/chromedp/chromedp"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/schollz/progressbar/v3"
	_ "gonum.org/v1/plot"
	_ "pgregory.net/rapid"
)
