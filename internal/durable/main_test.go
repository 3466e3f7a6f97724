package durable_test

import (
	"os"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// TestMain stops the redis-server processes redistest started for this binary.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
