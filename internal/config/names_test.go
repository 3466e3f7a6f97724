package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
)

// deployedFiles are the non-test Go files of the module's packages that pkgs
// link, by package import path.
func deployedFiles(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.ImportPath}} {{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}{{end}}`}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, name := range f[2:] {
			files[f[0]] = append(files[f[0]], filepath.Join(f[1], name))
		}
	}
	if len(files) < 10 {
		t.Fatalf("go list gave %d packages:\n%s", len(files), out)
	}
	return files
}

// variables are the names of every variable a function reads, each with the
// one file that may spell it.
func variables() map[string]string {
	home := map[string]string{eventbus.EnvBus: "internal/eventbus/eventbus.go"}
	for _, n := range append(append(append(config.Names(), config.RuntimeNames()...), config.NoticeNames()...), config.EnvGateKVSARN) {
		home[n] = "internal/config/config.go"
	}
	return home
}

// Every variable is named once: no deployed code spells one as a string of
// its own (the stack, the functions, the CLI use the constant), so the
// template and the code cannot disagree.
func TestVariablesSpelledOnce(t *testing.T) {
	home := variables()
	root, _ := filepath.Abs("../..")
	for _, files := range deployedFiles(t, "./functions/...", "./infra", "./cmd/vestibule") {
		for _, path := range files {
			rel, _ := filepath.Rel(root, path)
			eachLiteral(t, path, func(pos token.Position, s string, _ []ast.Node) {
				if h, ok := home[s]; ok && h != filepath.ToSlash(rel) {
					t.Errorf("%s:%d spells %q: use the constant of %s", rel, pos.Line, s, h)
				}
			})
		}
	}
}

// The functions read no variable but those named here (or in eventbus): a
// function's os.Getenv takes a constant, not a string of its own. awsenv
// reads the AWS runtime's own variables (AWS_REGION and the credentials).
func TestFunctionsReadNamedVariables(t *testing.T) {
	root, _ := filepath.Abs("../..")
	for pkg, files := range deployedFiles(t, "./functions/...") {
		if strings.HasSuffix(pkg, "/internal/awsenv") {
			continue
		}
		for _, path := range files {
			rel, _ := filepath.Rel(root, path)
			eachLiteral(t, path, func(pos token.Position, s string, stack []ast.Node) {
				if len(stack) < 2 {
					return
				}
				call, ok := stack[len(stack)-2].(*ast.CallExpr)
				if !ok {
					return
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") {
					t.Errorf("%s:%d reads the variable %q: name it in internal/config", rel, pos.Line, s)
				}
			})
		}
	}
}

// eachLiteral calls fn with every string literal of the file, where it is
// and the nodes around it (the literal last).
func eachLiteral(t *testing.T, path string, fn func(pos token.Position, s string, stack []ast.Node)) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				fn(fset.Position(lit.Pos()), s, stack)
			}
		}
		return true
	})
}
