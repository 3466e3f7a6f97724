package app_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/metrics"
)

// The composition root gives the custom metrics the stack name of the
// configuration (VESTIBULE_STACK), so the EMF lines carry the Stack dimension
// the stack's alarm watches.
func TestNewSetsTheMetricsStack(t *testing.T) {
	defer metrics.SetStack("")
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	core, err := app.New(config.Config{Stack: "Vestibule-staging"}, app.Options{Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	if got := metrics.Stack(); got != "Vestibule-staging" {
		t.Fatalf("metrics stack %q", got)
	}
}
