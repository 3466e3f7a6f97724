// Command hello is the smallest Go Lambda: the baseline that vestibule-bench
// compares each bootstrap's size and cold start with.
package main

import "github.com/aws/aws-lambda-go/lambda"

func main() {
	lambda.Start(func() (string, error) { return "ok", nil })
}
