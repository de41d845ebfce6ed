package deploy

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The image has two builders: the Dockerfile (an operator's, with a
// registry) and tools/realnode/runtime/mkimage (the real-node test's,
// without one). mkimage reads the Dockerfile's final stage and its go build
// line, so the facts below have one home; these tests keep the Dockerfile in
// the shape mkimage reads and its tool list equal to what the code runs.

// dockerStage is one FROM of the Dockerfile and its instructions.
type dockerStage struct {
	from, name string
	ins        [][2]string // instruction (upper case), its arguments
}

// readDockerfile splits ../Dockerfile into stages, continuation lines
// joined and comments dropped.
func readDockerfile(t *testing.T) []dockerStage {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []dockerStage
	var cont string
	for s := bufio.NewScanner(f); s.Scan(); {
		line := strings.TrimSpace(s.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cont == "") {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cont += rest + " "
			continue
		}
		line, cont = cont+line, ""
		cmd, args, _ := strings.Cut(line, " ")
		cmd, args = strings.ToUpper(cmd), strings.TrimSpace(args)
		if cmd == "FROM" {
			st := dockerStage{}
			st.from, st.name, _ = strings.Cut(args, " AS ")
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before the first FROM", cmd)
		}
		last := &stages[len(stages)-1]
		last.ins = append(last.ins, [2]string{cmd, args})
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and the image", len(stages))
	}
	return stages
}

// The tools line of the final stage; mkimage matches the same text.
var toolsLine = regexp.MustCompile(`^for tool in ([a-z0-9._ -]+); do command -v "\$tool" \|\| exit 1; done$`)

// imageSpec is what mkimage takes from the Dockerfile.
type imageSpec struct {
	buildOut, binary, user string
	entrypoint, tools      []string
}

func specOf(t *testing.T, stages []dockerStage) imageSpec {
	t.Helper()
	var spec imageSpec
	build, final := stages[len(stages)-2], stages[len(stages)-1]
	for _, in := range build.ins {
		if in[0] != "RUN" || !strings.Contains(in[1], " go build ") {
			continue
		}
		if strings.ContainsAny(in[1], "$`;&|<>(){}*?[") {
			t.Errorf("Dockerfile: RUN %q: mkimage runs this go build itself, from plain words only (no expansion, no second command)", in[1])
		}
		words := strings.Fields(in[1])
		i := slices.Index(words, "-o")
		if i < 0 || i+1 >= len(words) || spec.buildOut != "" {
			t.Fatalf("Dockerfile: want one `go build -o PATH` in stage %s, got %q", build.name, in[1])
		}
		spec.buildOut = words[i+1]
	}
	if spec.buildOut == "" {
		t.Fatalf("Dockerfile: no go build in stage %s", build.name)
	}
	for _, in := range final.ins {
		switch cmd, args := in[0], in[1]; cmd {
		case "RUN":
			m := toolsLine.FindStringSubmatch(args)
			if m == nil || spec.tools != nil {
				t.Errorf("Dockerfile final stage: RUN %q: mkimage reproduces only the one tools line (%s)", args, toolsLine)
				continue
			}
			spec.tools = strings.Fields(m[1])
		case "COPY":
			words := strings.Fields(args)
			if len(words) != 3 || words[0] != "--from="+build.name || spec.binary != "" {
				t.Errorf("Dockerfile final stage: COPY %s: want the one `COPY --from=%s SRC DEST` of the binary", args, build.name)
				continue
			}
			if words[1] != spec.buildOut {
				t.Errorf("Dockerfile: COPY takes %s but go build writes %s", words[1], spec.buildOut)
			}
			spec.binary = words[2]
		case "USER":
			spec.user = args
		case "ENTRYPOINT":
			if err := jsonStrings(args, &spec.entrypoint); err != nil {
				t.Errorf("Dockerfile: ENTRYPOINT %s is not the exec form: %v", args, err)
			}
		default:
			t.Errorf("Dockerfile final stage: %s %s: mkimage does not reproduce %s; teach it (and this test) first", cmd, args, cmd)
		}
	}
	return spec
}

// jsonStrings reads a JSON array of plain strings, as ENTRYPOINT's exec form has.
func jsonStrings(s string, into *[]string) error {
	inner, ok := strings.CutPrefix(s, "[")
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return strconv.ErrSyntax
	}
	for w := range strings.SplitSeq(inner, ",") {
		v, err := strconv.Unquote(strings.TrimSpace(w))
		if err != nil {
			return err
		}
		*into = append(*into, v)
	}
	return nil
}

// The final stage is the shape mkimage reads: the binary the build stage
// wrote, at one absolute path, run by an exec-form ENTRYPOINT of that path
// alone, as a numeric non-root user, with the tools line.
func TestDockerfileIsWhatMkimageReads(t *testing.T) {
	spec := specOf(t, readDockerfile(t))
	if !filepath.IsAbs(spec.binary) || filepath.Clean(spec.binary) != spec.binary {
		t.Errorf("binary path %q: want absolute and clean", spec.binary)
	}
	if !slices.Equal(spec.entrypoint, []string{spec.binary}) {
		t.Errorf("ENTRYPOINT %q, want [%q]: the roles are chosen by the pods' args", spec.entrypoint, spec.binary)
	}
	uid, gid, ok := strings.Cut(spec.user, ":")
	if u, err := strconv.Atoi(uid); err != nil || u == 0 || !ok {
		t.Errorf("USER %q: want numeric non-root uid:gid (Kubernetes' runAsNonRoot checks numbers)", spec.user)
	} else if _, err := strconv.Atoi(gid); err != nil {
		t.Errorf("USER %q: gid not numeric", spec.user)
	}
	if len(spec.tools) == 0 {
		t.Error("no tools line in the final stage")
	}
}

// The tools line names exactly what the shipped code executes: every
// os/exec of a non-test file under cmd/ and internal/ whose package the
// volplane binary links (test harnesses such as internal/stacktest are not
// in the image), plus what the
// k8s.io/mount-utils calls volplane makes run (mount, umount). A tool added
// to the code without the line fails here (and would fail in the image); a
// tool left on the line after the code stopped using it fails too.
func TestImageToolsAreWhatTheCodeRuns(t *testing.T) {
	want := execsOf(t, "../cmd", "../internal")
	got := specOf(t, readDockerfile(t)).tools
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Dockerfile tools line %q, the code runs %q", got, want)
	}
}

// mountUtilsExecs are the commands k8s.io/mount-utils runs for what
// volplane calls (Mount, Unmount, IsMountPoint on Linux, without systemd).
// Its formatting and resizing helpers run more (mkfs.*, fsck, blkid,
// resize2fs, xfs_growfs, btrfs, blockdev): execsOf refuses them until they
// are added here and to the Dockerfile.
var mountUtilsExecs = []string{"mount", "umount"}

// userCommands are the files that run a command the user names, not a tool
// of the image: `up --driver` and `conformance --driver` start the user's
// CSI driver, which the user brings (an image runs none: the deployed
// volplane serves no --driver).
var userCommands = map[string]bool{"../internal/userdriver/process.go": true}

// linkedDirs are the directories of the packages the volplane binary links.
func linkedDirs(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.Dir}}", "../cmd/volplane").Output()
	if err != nil {
		t.Fatalf("go list -deps ../cmd/volplane: %v", err)
	}
	dirs := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		dirs[d] = true
	}
	return dirs
}

// execsOf lists the commands the non-test Go files under dirs execute, in
// the packages the volplane binary links.
func execsOf(t *testing.T, dirs ...string) []string {
	t.Helper()
	linked := linkedDirs(t)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return fs.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			if abs, err := filepath.Abs(filepath.Dir(p)); err != nil || !linked[abs] {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			execName, mountName := "", ""
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				name := filepath.Base(path)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				switch path {
				case "os/exec":
					execName = name
				case "k8s.io/mount-utils":
					mountName = "mount"
					if imp.Name != nil {
						mountName = imp.Name.Name
					}
					for _, c := range mountUtilsExecs {
						seen[c] = true
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == mountName && mountName != "" &&
					(strings.Contains(sel.Sel.Name, "Format") || strings.Contains(sel.Sel.Name, "Resize")) {
					t.Errorf("%s: %s.%s runs mkfs/fsck/blkid or a resizer: add them to mountUtilsExecs and the Dockerfile", fset.Position(sel.Pos()), mountName, sel.Sel.Name)
				}
				return true
			})
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || execName == "" {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != execName {
					return true
				}
				arg := map[string]int{"Command": 0, "LookPath": 0, "CommandContext": 1}
				i, ok := arg[sel.Sel.Name]
				if !ok || i >= len(call.Args) {
					return true
				}
				lit, ok := call.Args[i].(*ast.BasicLit)
				name, err := strconv.Unquote(litValue(lit, ok))
				if (!ok || err != nil) && userCommands[p] {
					return true
				}
				if !ok || err != nil {
					t.Errorf("%s: exec.%s of a name not written as a literal: this test cannot tell which tool the image needs", fset.Position(call.Pos()), sel.Sel.Name)
					return true
				}
				seen[name] = true
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func litValue(lit *ast.BasicLit, ok bool) string {
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	return lit.Value
}
