package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/certorder/certorder/digicert/digicerttest"
)

// completeCommand is the hidden command the completion scripts call with
// the words typed so far, the last being the word under the cursor. It
// prints the candidates for that word, one per line as "word<TAB>summary",
// and nothing when a file name fits better: the scripts then complete
// file names. The candidates come from topCommands, adminCommands and each
// command's own flag set, so completion never drifts from the commands.
const completeCommand = "__complete"

const completionHelp = `print a shell completion script for certorder

  bash: source <(certorder completion bash)          # in ~/.bashrc
        certorder completion bash > /etc/bash_completion.d/certorder
  zsh:  certorder completion zsh > "${fpath[1]}/_certorder"   # then restart zsh
        or: source <(certorder completion zsh)       # after compinit, in ~/.zshrc
  fish: certorder completion fish > ~/.config/fish/completions/certorder.fish

The scripts ask the certorder binary itself what fits, so they follow upgrades.`

func (e *env) completion(args []string) error {
	fs := e.commandFlags("completion", "bash|zsh|fish", completionHelp)
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	script, ok := completionScripts[pos[0]]
	if !ok {
		return usageError("completion: %q is not one of bash, zsh, fish", pos[0])
	}
	_, err = io.WriteString(e.stdout, script)
	return err
}

func (e *env) complete(ctx context.Context, words []string) error {
	for _, c := range e.candidates(ctx, words) {
		fmt.Fprintf(e.stdout, "%s\t%s\n", c.word, c.summary)
	}
	return nil
}

// candidate is one completion: a word and what it does.
type candidate struct{ word, summary string }

// candidates completes the last of words, given the ones before it.
func (e *env) candidates(ctx context.Context, words []string) []candidate {
	if len(words) == 0 {
		words = []string{""}
	}
	done, cur := words[:len(words)-1], words[len(words)-1]
	help := len(done) > 0 && done[0] == "help" // help ADMIN MEMBER ...: names only
	if help {
		done = done[1:]
	}
	// The command path: the leading words that name a command, or a group.
	var path []string
	for _, w := range done {
		if !slices.ContainsFunc(e.children(path), func(c candidate) bool { return c.word == w }) {
			break
		}
		path = append(path, w)
	}
	if kids := e.children(path); kids != nil {
		if len(done) > len(path) { // an unknown word in the way
			return nil
		}
		if len(path) == 0 && !help && strings.HasPrefix(cur, "-") {
			kids = []candidate{{"--help", "print the list of commands"}, {"--version", "print the version"}}
		}
		return withPrefix(kids, cur)
	}
	if help {
		return nil
	}
	flags := e.flagsOf(ctx, path)
	if strings.HasPrefix(cur, "-") {
		var out []candidate
		for _, f := range flags {
			out = append(out, candidate{"--" + f.name, f.summary})
		}
		return withPrefix(out, cur)
	}
	if len(done) > len(path) {
		prev := strings.TrimLeft(done[len(done)-1], "-")
		if len(path) == 1 {
			if fv, ok := flagValues[[2]string{path[0], prev}]; ok {
				var out []candidate
				for _, v := range fv.values {
					out = append(out, candidate{v, fv.summary})
				}
				return withPrefix(out, cur)
			}
		}
		if strings.HasPrefix(done[len(done)-1], "-") && !strings.Contains(prev, "=") &&
			slices.ContainsFunc(flags, func(f flagInfo) bool { return f.name == prev && f.takesValue }) {
			return nil // the flag's value: a file name, if anything
		}
	}
	if len(path) == 1 && path[0] == "completion" && len(done) == 1 {
		return withPrefix([]candidate{{"bash", ""}, {"zsh", ""}, {"fish", ""}}, cur)
	}
	if len(path) == 2 && path[0] == "dev" && path[1] == "simulate" && len(done) == 2 {
		var out []candidate
		for _, a := range digicerttest.SimulateActions {
			out = append(out, candidate{a, "the change to make"})
		}
		return withPrefix(out, cur)
	}
	return nil
}

// flagValues are the values of the flags that take a word from a list, by
// command and flag.
var flagValues = map[[2]string]struct {
	values  []string
	summary string
}{
	{"acme-url", "action"}:   {acmeActions, "the ACME directory URL's action (DigiCert)"},
	{"deployed", "starttls"}: {starttlsProtocols, "ask for TLS inside this protocol first"},
}

// children lists what may follow path: the commands, the admin groups,
// or a group's commands. It is nil when path is a whole command.
func (e *env) children(path []string) []candidate {
	admin := e.adminCommands()
	switch {
	case len(path) == 0:
		var out []candidate
		for _, c := range topCommands {
			out = append(out, candidate{c.name, c.summary})
			if c.name == "serve" {
				out = append(out, candidate{"admin", "operator commands on the store"})
			}
		}
		return out
	case len(path) >= 1 && path[0] == "admin":
		return adminChildren(admin, path[1:])
	case len(path) == 1 && path[0] == "dev":
		var out []candidate
		for _, c := range devCommands {
			out = append(out, candidate{c.name, c.summary})
		}
		return out
	}
	return nil
}

// adminChildren are the words after admin and the group words typed
// (none, member, sync webhook): commands, and groups of two or more words.
func adminChildren(admin []adminCommand, group []string) []candidate {
	prefix := strings.Join(group, " ")
	if prefix != "" {
		prefix += " "
	}
	var out []candidate
	for _, c := range admin {
		rest, ok := strings.CutPrefix(c.name, prefix)
		if !ok {
			continue
		}
		word, _, more := strings.Cut(rest, " ")
		if !more {
			out = append(out, candidate{word, c.summary})
		} else if !slices.ContainsFunc(out, func(o candidate) bool { return o.word == word }) {
			out = append(out, candidate{word, prefix + word + " commands"})
		}
	}
	return out
}

func withPrefix(cs []candidate, prefix string) []candidate {
	var out []candidate
	for _, c := range cs {
		if strings.HasPrefix(c.word, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// flagInfo is one flag of a command, as its usage lists it.
type flagInfo struct {
	name, summary string
	takesValue    bool
}

// flagHeader is the first line flag.PrintDefaults writes for a flag:
// "  -name" or "  -name type", and for one-letter names the usage after a tab.
var flagHeader = regexp.MustCompile(`^  -([^\s=]+?)(?: (\S+))?(?:\t(.*))?$`)

// flagsOf reads a command's flags from its own --help, which every command
// answers before doing anything: the flag sets stay the one source.
func (e *env) flagsOf(ctx context.Context, path []string) []flagInfo {
	var out bytes.Buffer
	args := append(slices.Clone(path), "--help")
	if run(ctx, args, e.getenv, strings.NewReader(""), &out, io.Discard) != nil {
		return nil
	}
	var flags []flagInfo
	lines := strings.Split(out.String(), "\n")
	for i, line := range lines {
		m := flagHeader.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := flagInfo{name: m[1], takesValue: m[2] != "", summary: m[3]}
		if f.summary == "" && i+1 < len(lines) {
			f.summary = strings.TrimSpace(lines[i+1])
		}
		flags = append(flags, f)
	}
	return flags
}

var completionScripts = map[string]string{
	"bash": `# bash completion for certorder, from "certorder completion bash".
# The certorder binary itself says what fits: see "certorder __complete".
_certorder() {
    local line
    COMPREPLY=()
    while IFS= read -r line; do
        [[ -n $line ]] && COMPREPLY+=("${line%%$'\t'*}")
    done < <("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
}
complete -o default -F _certorder certorder
`,
	"zsh": `#compdef certorder
# zsh completion for certorder, from "certorder completion zsh".
# The certorder binary itself says what fits: see "certorder __complete".
_certorder() {
    local line
    local -a cands
    for line in "${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
        [[ -n $line ]] || continue
        cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    done
    if (( ${#cands} )); then
        _describe -t certorder 'certorder' cands
    else
        _files
    fi
}
if [[ ${funcstack[1]} == _certorder ]]; then
    _certorder "$@"
else
    compdef _certorder certorder
fi
`,
	"fish": `# fish completion for certorder, from "certorder completion fish".
# The certorder binary itself says what fits: see "certorder __complete".
function __certorder_candidates
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l cmd $tokens[1]
    set -e tokens[1]
    $cmd __complete $tokens "$current" 2>/dev/null
end
function __certorder_has_candidates
    set -l c (__certorder_candidates)
    test (count $c) -gt 0
end
# Where certorder offers nothing (a flag's value, a file), fish completes file names.
complete -c certorder -f -n __certorder_has_candidates -a '(__certorder_candidates)'
`,
}
