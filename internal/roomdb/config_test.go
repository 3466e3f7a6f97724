package roomdb

import (
	"reflect"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Each setting's default survives the Redis encoding, and so does a value away from it.
func TestSettingsEncoding(t *testing.T) {
	c := room.DefaultConfig()
	c.OriginURL = "https://shop.example.com/checkout"
	if got := DecodeConfig(pairsMap(EncodeConfig(c))); !reflect.DeepEqual(got, c) {
		t.Errorf("defaults through the Redis encoding: %+v; want %+v", got, c)
	}
	c.OIDCRedirectURIs = []string{"https://a.example/cb", "https://b.example/cb"}
	if got := DecodeConfig(pairsMap(EncodeConfig(c))); !reflect.DeepEqual(got, c) {
		t.Errorf("redirect URIs through the Redis encoding: %+v; want %+v", got, c)
	}
	// A name that is not a setting (the hash's internal fields) is ignored;
	// a missing setting is the zero value.
	got := DecodeConfig(map[string]string{"seed": "x", "ver": "y", "rate": "3", "maxActive": "5"})
	if !reflect.DeepEqual(got, room.Config{MaxActive: 5}) {
		t.Errorf("DecodeConfig = %+v", got)
	}
}

// pairsMap is EncodeConfig's field, value pairs as a hash.
func pairsMap(pairs []any) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i].(string)] = pairs[i+1].(string)
	}
	return m
}
