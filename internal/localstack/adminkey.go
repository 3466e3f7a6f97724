package localstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// AdminKeyFile is the file, beside the keys folder (.vestibule/admin-key),
// that keeps the generated admin key between runs, so an open console and
// an exported VESTIBULE_ADMIN_KEY keep working after a restart.
const AdminKeyFile = "admin-key"

// storedAdminKey reads the admin key kept in dir, or makes one and keeps it
// there (mode 0600).
func storedAdminKey(dir string) (string, error) {
	p := filepath.Join(dir, AdminKeyFile)
	b, err := os.ReadFile(p)
	if err == nil {
		k := strings.TrimSpace(string(b))
		if len(k) < config.MinAdminKeyLen {
			return "", fmt.Errorf("%s holds a key shorter than %d characters: delete it for a new one", p, config.MinAdminKeyLen)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("admin key: %w", err)
	}
	raw := make([]byte, 18)
	rand.Read(raw)
	k := base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("admin key: %w", err)
	}
	if err := os.WriteFile(p, []byte(k+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin key: %w", err)
	}
	return k, nil
}

// restoreMsg is the durable store's log message for a room it put back in
// Redis (internal/durable).
const restoreMsg = "room restored from the durable store"

// expectedRestores is a log handler for the embedded Redis, which starts
// empty at every run: putting the rooms back from .vestibule/rooms, and the
// demo event (closed, then rebuilt from the demo origin's store), is then
// the normal start, logged at info rather than as a warning (with a real
// Redis, REDIS_URL, it stays a warning: that Redis lost them).
type expectedRestores struct{ slog.Handler }

func (h expectedRestores) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, l) || (l == slog.LevelWarn && h.Handler.Enabled(ctx, slog.LevelInfo))
}

func (h expectedRestores) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && (r.Message == restoreMsg || r.Message == bookingdb.RestoredClosedMsg) {
		r = r.Clone()
		r.Level = slog.LevelInfo
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h expectedRestores) WithAttrs(as []slog.Attr) slog.Handler {
	return expectedRestores{h.Handler.WithAttrs(as)}
}

func (h expectedRestores) WithGroup(name string) slog.Handler {
	return expectedRestores{h.Handler.WithGroup(name)}
}
