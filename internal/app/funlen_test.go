package app_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function in deployed code may be, from the
// line of its func keyword to the line of its closing brace.
const maxFuncLines = 80

// deployedRoots are what is deployed or run against an account: the Lambda
// functions, the CDK app and the operator CLI.
var deployedRoots = []string{"./functions/...", "./infra", "./cmd/vestibule"}

// No function (nor function literal) in the module's packages that the
// deployed binaries and tools link is over maxFuncLines lines: a longer one
// is read as its steps, each a function of its own.
func TestNoLongFunctionsInDeployedCode(t *testing.T) {
	args := append([]string{"list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}{{end}}`}, deployedRoots...)
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, name := range fields[1:] {
			path := filepath.Join(fields[0], name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			files++
			for _, long := range longFunctions(fset, f, cmd.Dir) {
				t.Error(long)
			}
		}
	}
	if files < 50 {
		t.Fatalf("go list gave only %d files; expected the functions, the stack and the CLI:\n%s", files, out)
	}
}

// longFunctions names every function declaration or literal in f over
// maxFuncLines lines, as "file:line name (N lines)".
func longFunctions(fset *token.FileSet, f *ast.File, root string) []string {
	var long []string
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		var body *ast.BlockStmt
		switch fn := n.(type) {
		case *ast.FuncDecl:
			name, body = fn.Name.Name, fn.Body
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
		case *ast.FuncLit:
			name, body = "func literal", fn.Body
		default:
			return true
		}
		if body == nil {
			return true
		}
		start := fset.Position(n.Pos())
		lines := fset.Position(body.Rbrace).Line - start.Line + 1
		if lines > maxFuncLines {
			rel, err := filepath.Rel(root, start.Filename)
			if err != nil {
				rel = start.Filename
			}
			long = append(long, fmt.Sprintf("%s:%d %s: %d lines (at most %d)", rel, start.Line, name, lines, maxFuncLines))
		}
		return true
	})
	return long
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// moduleRoot is the folder of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
