package app_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The admit function only ticks: it links neither the token library nor the
// Secrets Manager client (the composition root keeps them in app/apiapp).
func TestAdmitLinksNoTokensNorSecrets(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/vestibule-dev/vestibule/functions/admit").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), "github.com/vestibule-dev/vestibule/internal/admission") {
		t.Fatalf("go list -deps gave no admission package:\n%s", out)
	}
	for _, bad := range []string{"golang-jwt", "secretsmanager", "internal/token", "internal/api\n"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("functions/admit links %s", strings.TrimSpace(bad))
		}
	}
}
