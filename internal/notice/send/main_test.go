package send_test

import (
	"os"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
