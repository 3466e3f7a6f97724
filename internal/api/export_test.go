package api

import "github.com/vestibule-dev/vestibule/internal/api/httpapi"

// DuplicateKey is httpapi.DuplicateKey, for the fuzzers' oracle.
var DuplicateKey = httpapi.DuplicateKey
