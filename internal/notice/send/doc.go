// Package send is the notify function's part of notices (package notice):
// it takes a room's due notices (Queue: the admin routes in AWS, the engine
// in make dev), opens each address, sends the message by web push
// (github.com/SherClockHolmes/webpush-go: RFC 8030, 8291, 8292) or by email
// through SES v2, and acks each with its outcome. It is apart from package
// notice so the API functions, which only seal addresses, link neither the
// push library nor the SES client.
package send
