package docref

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// decls is what one package name declares: its top-level names, and for each
// type the names of its methods and fields.
type decls struct {
	top     map[string]bool
	members map[string]map[string]bool
}

func newDecls() *decls {
	return &decls{top: map[string]bool{}, members: map[string]map[string]bool{}}
}

func (d *decls) member(typ, name string) {
	if d.members[typ] == nil {
		d.members[typ] = map[string]bool{}
	}
	d.members[typ][name] = true
}

// module is the parsed module: the declarations under each package name
// (a command's package main is also known by its folder's name, as in
// `vestibule.TestVerifyDraw`), and every parsed file.
type module struct {
	root  string
	fset  *token.FileSet
	pkgs  map[string]*decls
	files map[string]*ast.File // by path relative to root
	ours  map[string]bool      // import paths inside the module
}

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// skipDir is a folder that holds no code of the module's own.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" ||
		name == "vendor" || name == "dist" || name == "dist-host" || strings.HasPrefix(name, "cdk.out")
}

func loadModule(t *testing.T) *module {
	m := &module{root: moduleRoot(t), fset: token.NewFileSet(), pkgs: map[string]*decls{},
		files: map[string]*ast.File{}, ours: map[string]bool{}}
	gomod, err := os.ReadFile(filepath.Join(m.root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	modPath := strings.Fields(strings.SplitN(string(gomod), "\n", 2)[0])[1]
	err = filepath.WalkDir(m.root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != m.root && skipDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(m.fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(m.root, path)
		m.files[rel] = f
		m.ours[modPath+"/"+filepath.ToSlash(filepath.Dir(rel))] = true
		name := strings.TrimSuffix(f.Name.Name, "_test")
		m.declare(name, f)
		if name == "main" {
			m.declare(filepath.Base(filepath.Dir(path)), f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *module) declare(pkg string, f *ast.File) {
	d := m.pkgs[pkg]
	if d == nil {
		d = newDecls()
		m.pkgs[pkg] = d
	}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil || len(decl.Recv.List) == 0 {
				d.top[decl.Name.Name] = true
				continue
			}
			d.member(receiverType(decl.Recv.List[0].Type), decl.Name.Name)
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					d.top[spec.Name.Name] = true
					d.declareMembers(spec)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						d.top[n.Name] = true
					}
				}
			}
		}
	}
}

func (d *decls) declareMembers(spec *ast.TypeSpec) {
	switch typ := spec.Type.(type) {
	case *ast.StructType:
		for _, f := range typ.Fields.List {
			for _, n := range f.Names {
				d.member(spec.Name.Name, n.Name)
			}
			if len(f.Names) == 0 { // embedded: its name, and (unknown) its members
				d.member(spec.Name.Name, receiverType(f.Type))
				d.member(spec.Name.Name, "*")
			}
		}
	case *ast.InterfaceType:
		for _, f := range typ.Methods.List {
			for _, n := range f.Names {
				d.member(spec.Name.Name, n.Name)
			}
			if len(f.Names) == 0 {
				d.member(spec.Name.Name, "*")
			}
		}
	default: // a named type of another: its members are the other's
		d.member(spec.Name.Name, "*")
	}
}

func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// citation is `pkg.Name` or `pkg.Type.Member`, not inside a longer dotted
// name or a path segment such as a host name.
var citation = regexp.MustCompile(`(^|[^A-Za-z0-9_.\-])([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(\.[A-Z][A-Za-z0-9_]*)?`)

// resolve says why pkg.name(.member) names nothing, or "" when it does, or
// when pkg is no package of the module's.
func (m *module) resolve(pkg, name, member string) string {
	d, ok := m.pkgs[pkg]
	if !ok {
		return ""
	}
	if !d.top[name] {
		return fmt.Sprintf("package %s declares no %s", pkg, name)
	}
	if member == "" {
		return ""
	}
	members := d.members[name]
	if members == nil || members[member] || members["*"] {
		return "" // a function's or a value's member is out of reach here
	}
	return fmt.Sprintf("%s.%s has no method or field %s", pkg, name, member)
}

// external is the package names a Go file imports from outside the module:
// in its comments, `config.LoadDefaultConfig` is the AWS SDK's.
func (m *module) external(f *ast.File) map[string]bool {
	ext := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if m.ours[path] {
			continue
		}
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if strings.HasPrefix(name, "v") && len(name) <= 3 { // …/go-redis/v9
			name = filepath.Base(filepath.Dir(path))
		}
		ext[name] = true
	}
	return ext
}

// elsewhere is what the prose cites of packages outside the module whose
// names our packages share.
var elsewhere = map[string]bool{
	"config.LoadDefaultConfig": true, // aws-sdk-go-v2/config
	"config.WithRegion":        true,
}

func (m *module) check(where string, text string, skip map[string]bool) []string {
	var bad []string
	for i, line := range strings.Split(text, "\n") {
		for _, c := range citation.FindAllStringSubmatch(line, -1) {
			pkg, name, member := c[2], c[3], strings.TrimPrefix(c[4], ".")
			if skip[pkg] || elsewhere[pkg+"."+name] {
				continue
			}
			if why := m.resolve(pkg, name, member); why != "" {
				bad = append(bad, fmt.Sprintf("%s:%d: %s (%s)", where, i+1, strings.TrimSpace(c[0]), why))
			}
		}
	}
	return bad
}

// TestCitedNamesExist resolves every pkg.Name that README.md, docs/, the Lua
// scripts and the Go comments cite against what the module declares.
func TestCitedNamesExist(t *testing.T) {
	m := loadModule(t)
	var bad []string
	var prose []string
	for _, pattern := range []string{"README.md", "docs/*.md", "lua/*.lua"} {
		matches, err := filepath.Glob(filepath.Join(m.root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		prose = append(prose, matches...)
	}
	if len(prose) < 3 {
		t.Fatalf("found only %d prose files under %s", len(prose), m.root)
	}
	for _, path := range prose {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(m.root, path)
		bad = append(bad, m.check(rel, string(b), nil)...)
	}
	for rel, f := range m.files {
		skip := m.external(f)
		for _, g := range f.Comments {
			line := m.fset.Position(g.Pos()).Line
			for i, text := range strings.Split(g.Text(), "\n") {
				for _, b := range m.check(rel, text, skip) {
					// check numbers lines from 1 within the one line it was given
					bad = append(bad, strings.Replace(b, rel+":1:", fmt.Sprintf("%s:%d:", rel, line+i), 1))
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestCheckFindsAStaleName shows the check failing on a name no package
// declares, and passing one that exists, so its silence above means something.
func TestCheckFindsAStaleName(t *testing.T) {
	m := loadModule(t)
	if got := m.check("x.md", "see `room.NoSuchThing` and `room.Config`", nil); len(got) != 1 ||
		!strings.Contains(got[0], "room.NoSuchThing") {
		t.Errorf("check = %q, want one finding naming room.NoSuchThing", got)
	}
	if got := m.check("x.md", "`room.Config.NoSuchField` and `docref.TestCitedNamesExist`", nil); len(got) != 1 {
		t.Errorf("check = %q, want one finding (the missing field)", got)
	}
	if got := m.check("x.md", "http://docs.aws.amazon.com/x.Y, internal/room.Config", nil); len(got) != 0 {
		t.Errorf("check = %q, want none", got)
	}
}
