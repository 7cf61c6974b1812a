// Command apifigures prints, per package of the module (run from its root),
// the figures issue 27 tracks: the lines of its non-test Go files, its
// exported top-level names and how many of them other packages' non-test
// code uses, and in its non-test code the type assertions (type-switch
// cases included) to a concrete type and to an interface (a probe for an
// optional capability). It reads the sources only: a name is used outside
// when another package selects it through its import; an asserted type is
// an interface when it is an interface literal, error or any, or a named
// type the module declares as an interface.
//
//	go run ./scripts/apifigures
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// pkg is one package as go list gives it, and what its files declare.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	files      []*ast.File
	lines      int
	exported   []string
	ifaces     map[string]bool // its named interface types
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "apifigures:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	byPath := map[string]*pkg{}
	var paths []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	fset := token.NewFileSet()
	for dec.More() {
		p := &pkg{ifaces: map[string]bool{}}
		if err := dec.Decode(p); err != nil {
			return err
		}
		for _, name := range append(p.GoFiles, p.CgoFiles...) {
			path := filepath.Join(p.Dir, name)
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			p.lines += strings.Count(string(src), "\n")
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				return err
			}
			p.files = append(p.files, f)
			declare(p, f)
		}
		byPath[p.ImportPath] = p
		paths = append(paths, p.ImportPath)
	}
	used := map[string]bool{} // "path.Name" selected by another package
	for _, p := range byPath {
		for _, f := range p.files {
			imports := importNames(f)
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil {
						if path, ok := imports[x.Name]; ok && path != p.ImportPath {
							used[path+"."+sel.Sel.Name] = true
						}
					}
				}
				return true
			})
		}
	}
	sort.Strings(paths)
	module := strings.SplitN(paths[0], "/", 2)[0]
	fmt.Printf("%-28s %6s %9s %6s %8s %7s\n", "package", "lines", "exported", "used", "concrete", "probes")
	for _, path := range paths {
		p := byPath[path]
		out := 0
		for _, name := range p.exported {
			if used[path+"."+name] {
				out++
			}
		}
		conc, probes := 0, 0
		for _, f := range p.files {
			imports := importNames(f)
			ast.Inspect(f, func(n ast.Node) bool {
				for _, t := range assertedTypes(n) {
					if isInterface(t, p, imports, byPath) {
						probes++
					} else {
						conc++
					}
				}
				return true
			})
		}
		fmt.Printf("%-28s %6d %9d %6d %8d %7d\n", strings.TrimPrefix(path, module+"/"), p.lines, len(p.exported), out, conc, probes)
	}
	return nil
}

// declare records f's exported top-level names and named interfaces in p.
func declare(p *pkg, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				p.exported = append(p.exported, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if _, ok := s.Type.(*ast.InterfaceType); ok {
						p.ifaces[s.Name.Name] = true
					}
					if s.Name.IsExported() {
						p.exported = append(p.exported, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							p.exported = append(p.exported, n.Name)
						}
					}
				}
			}
		}
	}
}

// importNames maps the names f refers to its imports by to their paths.
func importNames(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		m[name] = path
	}
	return m
}

// assertedTypes are the types n asserts to: x.(T), or a type switch's cases.
func assertedTypes(n ast.Node) []ast.Expr {
	switch x := n.(type) {
	case *ast.TypeAssertExpr:
		if x.Type != nil {
			return []ast.Expr{x.Type}
		}
	case *ast.TypeSwitchStmt:
		var ts []ast.Expr
		for _, c := range x.Body.List {
			for _, t := range c.(*ast.CaseClause).List {
				if id, ok := t.(*ast.Ident); !ok || id.Name != "nil" {
					ts = append(ts, t)
				}
			}
		}
		return ts
	}
	return nil
}

// isInterface reports whether t, asserted to in p, names an interface.
func isInterface(t ast.Expr, p *pkg, imports map[string]string, byPath map[string]*pkg) bool {
	switch t := t.(type) {
	case *ast.InterfaceType:
		return true
	case *ast.Ident:
		return t.Name == "error" || t.Name == "any" || p.ifaces[t.Name]
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok {
			if q := byPath[imports[x.Name]]; q != nil {
				return q.ifaces[t.Sel.Name]
			}
		}
	}
	return false
}
