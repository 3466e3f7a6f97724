package room

// NonceSpreads exposes nonceSpreads to the tests, which pick nonces as the
// challenges of a spread room, or of one that does not spread, carry them.
var NonceSpreads = nonceSpreads
