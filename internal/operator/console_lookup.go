package operator

import (
	"net/http"
	"net/url"
	"strings"
)

// lookupQueries are the admin GET routes that take a query, and its one
// parameter: the console's proxy passes that parameter alone, re-encoded.
var lookupQueries = map[string]string{"/visitors": "ref", "/invitations": "id"}

// lookupQuery is the query the proxy sends on for an admin GET of path with
// query q; ok is false for any other route or parameter.
func lookupQuery(method, path string, q url.Values) (string, bool) {
	if method != http.MethodGet {
		return "", false
	}
	for suffix, name := range lookupQueries {
		if strings.HasSuffix(path, suffix) && len(q) == 1 && len(q[name]) == 1 {
			return url.Values{name: q[name]}.Encode(), true
		}
	}
	return "", false
}
