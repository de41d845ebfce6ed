package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// imageSpec is what the Dockerfile says of the volplane image: the go build
// of its build stage and everything of its final stage. mkimage builds the
// local image from it alone, so the two cannot drift; deploy/image_test.go
// (main module) keeps the Dockerfile in the shape read here.
type imageSpec struct {
	GoVersion  string   // of the build stage's golang:VERSION-... base
	BuildEnv   []string // the go build's VAR=value words
	BuildArgs  []string // go build's arguments, the -o pair removed
	BuildOut   string   // go build -o, which the final stage copies
	Binary     string   // where the final stage puts it
	User       string
	Entrypoint []string
	Tools      []string // the tools line: what must be on the PATH
}

// toolsLine is the final stage's one RUN (deploy/image_test.go matches the same text).
var toolsLine = regexp.MustCompile(`^for tool in ([a-z0-9._ -]+); do command -v "\$tool" \|\| exit 1; done$`)

var golangBase = regexp.MustCompile(`^golang:([0-9]+\.[0-9]+(\.[0-9]+)?)-`)

type instruction struct{ cmd, args string }

type stage struct {
	from, name string
	ins        []instruction
}

// readDockerfile splits a Dockerfile into stages: comments dropped,
// continuation lines joined.
func readDockerfile(path string) ([]stage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var stages []stage
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
			st := stage{}
			st.from, st.name, _ = strings.Cut(args, " AS ")
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("%s: %s before the first FROM", path, cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, instruction{cmd, args})
	}
	if len(stages) < 2 {
		return nil, fmt.Errorf("%s: %d stages, want a build stage and the image", path, len(stages))
	}
	return stages, nil
}

// specOf reads the spec from a Dockerfile. Anything in the final stage
// mkimage would not reproduce is an error, not skipped.
func specOf(path string) (imageSpec, error) {
	stages, err := readDockerfile(path)
	if err != nil {
		return imageSpec{}, err
	}
	var spec imageSpec
	build, final := stages[len(stages)-2], stages[len(stages)-1]
	m := golangBase.FindStringSubmatch(build.from)
	if m == nil {
		return spec, fmt.Errorf("%s: build stage FROM %s: want golang:VERSION-...", path, build.from)
	}
	spec.GoVersion = "go" + m[1]
	for _, in := range build.ins {
		if in.cmd != "RUN" || !strings.Contains(in.args, " go build ") {
			continue
		}
		if spec.BuildOut != "" {
			return spec, fmt.Errorf("%s: two go builds in stage %s", path, build.name)
		}
		if err := spec.readBuild(in.args); err != nil {
			return spec, fmt.Errorf("%s: RUN %s: %w", path, in.args, err)
		}
	}
	if spec.BuildOut == "" {
		return spec, fmt.Errorf("%s: no go build -o in stage %s", path, build.name)
	}
	for _, in := range final.ins {
		switch in.cmd {
		case "RUN":
			m := toolsLine.FindStringSubmatch(in.args)
			if m == nil || spec.Tools != nil {
				return spec, fmt.Errorf("%s: final stage RUN %s: only the one tools line is reproduced", path, in.args)
			}
			spec.Tools = strings.Fields(m[1])
		case "COPY":
			w := strings.Fields(in.args)
			if len(w) != 3 || w[0] != "--from="+build.name || w[1] != spec.BuildOut || spec.Binary != "" {
				return spec, fmt.Errorf("%s: final stage COPY %s: want the one COPY --from=%s %s DEST", path, in.args, build.name, spec.BuildOut)
			}
			spec.Binary = w[2]
		case "USER":
			spec.User = in.args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &spec.Entrypoint); err != nil {
				return spec, fmt.Errorf("%s: ENTRYPOINT %s: not the exec form: %w", path, in.args, err)
			}
		default:
			return spec, fmt.Errorf("%s: final stage %s %s: mkimage does not reproduce %s", path, in.cmd, in.args, in.cmd)
		}
	}
	if spec.Binary == "" || len(spec.Entrypoint) == 0 || spec.Tools == nil {
		return spec, fmt.Errorf("%s: final stage lacks the binary's COPY, ENTRYPOINT or the tools line", path)
	}
	return spec, nil
}

// readBuild takes the env words, go build's arguments and -o from a RUN's
// shell text (its --mount flags are BuildKit's, not the shell's).
func (spec *imageSpec) readBuild(run string) error {
	words, err := shellWords(run)
	if err != nil {
		return err
	}
	for len(words) > 0 && strings.HasPrefix(words[0], "--mount=") {
		words = words[1:]
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		spec.BuildEnv, words = append(spec.BuildEnv, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		return fmt.Errorf("want [--mount=...] [VAR=value ...] go build ..., got %q", words)
	}
	args := words[2:]
	i := slices.Index(args, "-o")
	if i < 0 || i+1 >= len(args) {
		return fmt.Errorf("go build without -o PATH")
	}
	spec.BuildOut = args[i+1]
	spec.BuildArgs = slices.Concat(args[:i], args[i+2:])
	return nil
}

// shellWords splits text as sh does for plain words, '...' and "..."
// (with \ escapes); anything needing expansion is refused.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				if s[i] == '$' || s[i] == '`' {
					return nil, fmt.Errorf("expansion in %q", s)
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf(`unclosed " in %q`, s)
			}
			inWord = true
		case strings.IndexByte("$`;&|<>(){}*?[", c) >= 0:
			return nil, fmt.Errorf("shell syntax %q in %q: mkimage runs plain words only", c, s)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
