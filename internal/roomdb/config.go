package roomdb

import "github.com/vestibule-dev/vestibule/internal/room"

// settings are the rows of the settings table (room.Settings), read once.
var settings = room.Settings()

// EncodeConfig is the settings as the field, value pairs config.lua stores
// (room.Setting.Encode).
func EncodeConfig(c room.Config) []any {
	out := make([]any, 0, 2*len(settings))
	for _, s := range settings {
		out = append(out, s.Name, s.Encode(c))
	}
	return out
}

// DecodeConfig reads the settings by name; a setting missing from the hash
// (a room stored before the setting existed) is its type's zero value, as the
// Lua scripts read it, and names that are not settings (the hash's internal
// fields) are ignored.
func DecodeConfig(m map[string]string) room.Config {
	var c room.Config
	for _, s := range settings {
		if v, ok := m[s.Name]; ok {
			s.Decode(&c, v)
		}
	}
	return c
}
