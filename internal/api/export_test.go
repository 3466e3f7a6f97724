package api

// DuplicateKey is duplicateKey, for the fuzzers' oracle.
var DuplicateKey = duplicateKey
