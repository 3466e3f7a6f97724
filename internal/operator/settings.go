package operator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Setting is one room setting as the admin API names and types it.
type Setting struct {
	Name string // the JSON name, e.g. maxActive
	Type string // "integer", "number", "boolean", "string", "time", "object" (JSON, e.g. page) or "list" (of strings)
}

var timeType = reflect.TypeFor[time.Time]()

// Settings lists the room settings, read from room.Config's JSON names and
// types, so a setting the engine adds is known here without a change.
func Settings() []Setting {
	var out []Setting
	t := reflect.TypeFor[room.Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		var typ string
		switch {
		case ft == timeType:
			typ = "time"
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			typ = "integer"
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			typ = "number"
		case ft.Kind() == reflect.Bool:
			typ = "boolean"
		case ft.Kind() == reflect.String:
			typ = "string"
		case ft.Kind() == reflect.Struct:
			typ = "object"
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			typ = "list"
		default:
			continue // not settable from the command line
		}
		out = append(out, Setting{name, typ})
	}
	return out
}

// ParseSettings turns key=value pairs into the JSON object of a room PUT,
// each value typed by its setting: integers, numbers, booleans, strings, and
// times in RFC 3339 ("none" clears a time), objects as JSON ("none" clears
// one: page='{"title":"Spring concert","accentColor":"#b3261e"}'), lists
// comma-separated ("none" clears one: oidcRedirectUris=https://a/cb,https://b/cb). An unknown key, a repeated key or
// a value of the wrong type is an error naming it.
func ParseSettings(pairs []string) (map[string]any, error) {
	known := Settings()
	out := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, &Error{Message: fmt.Sprintf("%q is not key=value", p), Hint: "e.g. maxActive=500 admitPerMinute=3000"}
		}
		i := slices.IndexFunc(known, func(s Setting) bool { return s.Name == k })
		if i < 0 {
			return nil, unknownSetting(k, known)
		}
		if _, dup := out[k]; dup {
			return nil, &Error{Message: fmt.Sprintf("%s is given twice", k)}
		}
		val, err := parseValue(known[i], k, v)
		if err != nil {
			return nil, err
		}
		out[k] = val
	}
	return out, nil
}

// parseValue is the value v of the setting s (named k) as the PUT's JSON
// takes it; nil clears a time, an object or a list.
func parseValue(s Setting, k, v string) (any, error) {
	bad := func(want string) error {
		return &Error{Message: fmt.Sprintf("%s=%s: %s must be %s", k, v, k, want)}
	}
	if (s.Type == "time" || s.Type == "object" || s.Type == "list") && (v == "" || v == "none" || v == "null") {
		return nil, nil // clears the setting
	}
	switch s.Type {
	case "integer":
		n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
		if err != nil {
			return nil, bad("a whole number")
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, bad("a number")
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, bad("true or false")
		}
		return b, nil
	case "time":
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, bad("an RFC 3339 time such as 2026-12-01T10:00:00Z, or none")
		}
		return t, nil
	case "object":
		var obj map[string]any
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			return nil, bad(`a JSON object such as '{"title":"Spring concert"}', or none`)
		}
		return json.RawMessage(v), nil
	case "list":
		list := []string{}
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
		return list, nil
	}
	return v, nil
}

func unknownSetting(k string, known []Setting) error {
	names := make([]string, len(known))
	for i, s := range known {
		names[i] = s.Name
	}
	msg := fmt.Sprintf("unknown setting %q", k)
	for _, n := range names {
		if strings.EqualFold(n, k) {
			msg += fmt.Sprintf(" (did you mean %s? names are case-sensitive)", n)
		}
	}
	return &Error{Code: "unknown_setting", Message: msg, Hint: "the settings are: " + strings.Join(names, ", ")}
}
