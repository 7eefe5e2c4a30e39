package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// UsageError is a command line or configuration the binary refuses
// before it does anything: a bad flag or value, flags that contradict
// each other, an unreadable -tls-cert. The binary prints it on one line
// to stderr and exits with status 2.
type UsageError struct {
	// Err is what is refused and why, naming the flag or variable.
	Err error
	// Help is the command whose -h tells more, such as "visitors" or
	// "visitors check"; "" when the message says all there is.
	Help string
}

// Error returns the refusal's message, and where to read more.
func (e *UsageError) Error() string {
	if e.Help == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "; see " + e.Help + " -h"
}

// Unwrap returns the refusal's cause.
func (e *UsageError) Unwrap() error { return e.Err }

// usage wraps err in a [UsageError], or returns nil.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// A form is what a flag takes, said in words for its refusal.
type form struct {
	want string // "a positive duration such as 100ms or 2s"; "": the Value's own error says it
	// ok reports whether a value its flag.Value took (as flag.Getter
	// returns it) is one the flag means; nil: any the Value takes.
	ok func(v any) bool
}

// Forms of the flags whose values have a range or a list, used by more
// than one command.
var (
	wholeNoLimit  = form{"a whole number, 0 or more (0: no limit)", atLeast(0)}
	wholeAtLeast1 = form{"a whole number, at least 1", atLeast(1)}
	bytesAtLeast1 = form{"a number of bytes, at least 1", atLeast(int64(1))}
	positiveDur   = form{"a positive duration such as 100ms or 2s", atLeast(time.Nanosecond)}
	rateForm      = form{"N/s, N/m, N/h or N/d with N a positive number, or 0 for no limit", nil}
)

// atLeast returns a form's ok that wants a value of min's type, at
// least min. A flag of another type is a bug: it panics on the first
// value set.
func atLeast[T int | int64 | uint64 | time.Duration](min T) func(any) bool {
	return func(v any) bool { return v.(T) >= min }
}

// formOf returns the form of a flag that has none of its own: what its
// type takes.
func formOf(v flag.Value) form {
	g, ok := v.(flag.Getter)
	if !ok {
		return form{}
	}
	switch g.Get().(type) {
	case bool:
		return form{want: "true or false"}
	case int, int64:
		return form{want: "a whole number"}
	case uint, uint64:
		return form{want: "a whole number, 0 or more"}
	case float64:
		return form{want: "a number"}
	case time.Duration:
		return form{want: "a duration such as 100ms or 2s"}
	}
	return form{}
}

// commandLine is the flag set of one visitors command, parsed the way
// every command parses: each flag that has a VISITORS_* variable first
// from it, then from the command line; -h, -help and --help write the
// usage to stdout; a bad flag, a bad value, an argument too many are
// one [UsageError] line.
type commandLine struct {
	fs       *flag.FlagSet
	name     string // "visitors" or "visitors check": what -h and the refusals call it
	prefix   string // "" or "check: ", before each refusal
	synopsis string // what -h prints before the flags
	env      func(flag string) bool
	bad      error // the refusal of the last command-line value refused, set by checked.Set
}

// newCommandLine returns the empty flag set of the command name (with
// the subcommand, if any) whose usage begins with synopsis. A flag has a
// VISITORS_* variable if env reports so.
func newCommandLine(name, synopsis string, env func(flag string) bool) *commandLine {
	cl := &commandLine{fs: flag.NewFlagSet(name, flag.ContinueOnError), name: name, synopsis: synopsis, env: env}
	if sub, ok := strings.CutPrefix(name, "visitors "); ok {
		cl.prefix = sub + ": "
	}
	cl.fs.SetOutput(io.Discard) // refusals are one line, made here; -h goes to stdout
	cl.fs.Usage = func() {}
	return cl
}

// checked is a flag's Value that refuses what its form does not take.
type checked struct {
	flag.Value
	form form
	cl   *commandLine
	name string
}

// Set sets the value from s, or refuses it with the form wanted.
func (c *checked) Set(s string) error {
	err := c.set(s)
	if err != nil {
		c.cl.bad = c.cl.refusal("-"+c.name+" "+shown(s), err)
	}
	return err
}

// set sets the value from s, or returns what is wrong with s.
func (c *checked) set(s string) error {
	err := c.Value.Set(s)
	if err == nil && c.form.ok != nil && !c.form.ok(c.Value.(flag.Getter).Get()) {
		err = errors.New("out of range")
	}
	if err != nil && c.form.want != "" {
		return errors.New("want " + c.form.want)
	}
	return err
}

// IsBoolFlag reports whether the flag is a bool, which takes no value
// after it on the command line.
func (c *checked) IsBoolFlag() bool {
	b, ok := c.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// refusal returns the one-line refusal of what (a flag and its value,
// or a variable and its), for err.
func (cl *commandLine) refusal(what string, err error) error {
	return &UsageError{Err: fmt.Errorf("%s%s: %w", cl.prefix, what, err), Help: cl.name}
}

// refuse returns the one-line [UsageError] of err, which is about the
// command line as a whole.
func (cl *commandLine) refuse(err error) error {
	return &UsageError{Err: fmt.Errorf("%s%w", cl.prefix, err), Help: cl.name}
}

// parseNone parses args as parse does, and refuses an argument left
// after the flags: the command takes none.
func (cl *commandLine) parseNone(args []string, forms map[string]form, getenv func(string) string, stdout io.Writer) error {
	rest, err := cl.parse(args, forms, getenv, stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cl.refuse(fmt.Errorf("unexpected argument %q", rest[0]))
	}
	return nil
}

// parse checks each flag's values against its form (forms[name], or
// what its type takes), sets the flags from their variables, then from
// args, and returns the arguments after the flags. With -h it writes the
// usage to stdout and returns flag.ErrHelp.
func (cl *commandLine) parse(args []string, forms map[string]form, getenv func(string) string, stdout io.Writer) ([]string, error) {
	cl.fs.VisitAll(func(f *flag.Flag) {
		fm, ok := forms[f.Name]
		if !ok {
			fm = formOf(f.Value)
		}
		f.Value = &checked{Value: f.Value, form: fm, cl: cl, name: f.Name}
	})
	var envErr error
	cl.fs.VisitAll(func(f *flag.Flag) {
		if envErr != nil || !cl.env(f.Name) {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := f.Value.(*checked).set(v); err != nil {
				envErr = cl.refusal(envName(f.Name)+"="+shown(v), err)
			}
		}
	})
	cl.bad = nil
	err := cl.fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp): // even beside a bad variable: the help says how to mend it
		cl.usage(stdout)
		return nil, err
	case envErr != nil: // refused even if a flag overrides it: it is a bad configuration
		return nil, envErr
	case err == nil:
		return cl.fs.Args(), nil
	case cl.bad != nil:
		return nil, cl.bad
	}
	// The flag package's own refusals, by their text (TestParseFlagsErrors
	// and TestBinaryRefusesBadCommandLine catch a change of it).
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return nil, cl.refuse(errors.New("unknown flag " + name))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return nil, cl.refuse(errors.New(name + " needs a value"))
	}
	return nil, cl.refuse(err)
}

// usage writes the synopsis and every flag, with its default and its
// variable, to w.
func (cl *commandLine) usage(w io.Writer) {
	fmt.Fprint(w, cl.synopsis)
	cl.fs.VisitAll(func(f *flag.Flag) {
		v := f.Value
		if c, ok := v.(*checked); ok {
			v = c.Value // for UnquoteUsage, which names the argument by the Value's type
		}
		name, usage := flag.UnquoteUsage(&flag.Flag{Name: f.Name, Usage: f.Usage, Value: v})
		if a, ok := v.(interface{ argName() string }); ok && name == "value" {
			name = a.argName() // a Value of the service's own, named as its value is written
		}
		env := ""
		if cl.env(f.Name) {
			env = "; env " + envName(f.Name)
		}
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(w, "  -%s%s\n    \t%s (default %q%s)\n", f.Name, name, usage, f.DefValue, env)
	})
}

// shown returns s as a refusal quotes it: as it is, unless it is empty
// or holds a space, a quote or a character that does not print.
func shown(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
