package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// envName is the environment variable of flag name: LETHE_ and the name
// in upper case, - as _ (-log-level: LETHE_LOG_LEVEL).
func envName(name string) string {
	return "LETHE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// fromEnv sets every flag of fs whose environment variable is set, as
// lookup (os.LookupEnv) finds it: for containers and CI services, where
// the environment is the configuration. Parse afterwards, so that a flag
// on the command line wins. A value the flag refuses is an error naming
// the variable; other LETHE_ variables are no concern of it.
func fromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := lookup(envName(f.Name)); ok && err == nil {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %v", envName(f.Name), v, serr)
			}
		}
	})
	return err
}

// helpOutput is where -help goes: standard error (tests replace it).
var helpOutput io.Writer = os.Stderr

// usage returns fs's -help: the synopsis, then every flag with its
// environment variable, its meaning and its default.
func usage(fs *flag.FlagSet, synopsis string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "%s\nEvery flag may be set in the environment too, as LETHE_<FLAG> (upper case, - as _); the command line wins.\n\n", synopsis)
		printFlags(w, fs)
	}
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		typ, text := flag.UnquoteUsage(f)
		head := "  -" + f.Name
		if typ != "" {
			head += " " + typ
		}
		fmt.Fprintf(w, "%s  (env %s)\n    \t%s", head, envName(f.Name), strings.ReplaceAll(text, "\n", "\n    \t"))
		// A default that the usage says itself (the key's, in words) is
		// not said again.
		if def := f.DefValue; def != "" && def != "false" && def != "0" && !strings.Contains(text, "(default") {
			if typ == "string" {
				def = fmt.Sprintf("%q", def)
			}
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	})
}
