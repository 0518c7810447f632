package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// logOutput is where the command logs: standard error (tests replace it).
var logOutput io.Writer = os.Stderr

// logFlags are the flags that shape the log.
type logFlags struct {
	level, format *string
}

func addLogFlags(fs *flag.FlagSet) logFlags {
	return logFlags{
		level:  fs.String("log-level", "info", "the least level logged: debug (one line per request), info, warn or error"),
		format: fs.String("log-format", "text", "the log's format: text (key=value) or json (one object a line)"),
	}
}

// logger returns the command's logger, as the flags say.
func (f logFlags) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.level)); err != nil {
		return nil, fmt.Errorf("-log-level (LETHE_LOG_LEVEL) %q: want debug, info, warn or error", *f.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(*f.format) {
	case "text":
		return slog.New(slog.NewTextHandler(logOutput, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(logOutput, opts)), nil
	}
	return nil, fmt.Errorf("-log-format (LETHE_LOG_FORMAT) %q: want text or json", *f.format)
}

// logRequests returns the observer that logs each request at debug, or nil
// if the logger does not log debug.
func logRequests(l *slog.Logger) func(*served) {
	if !l.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	return func(s *served) {
		l.Debug("request", "method", s.method, "resource", s.path, "operation", s.operation,
			"status", s.status, "substatus", s.substatus, "ru", s.charge, "duration", s.duration, "activity", s.activity)
	}
}
