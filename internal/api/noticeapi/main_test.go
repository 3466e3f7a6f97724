package noticeapi_test

import (
	"os"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// The fixture, the requests and the checks are internal/apitest's.

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
