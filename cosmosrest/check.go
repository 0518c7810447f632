package cosmosrest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lethedb/lethe"
	"github.com/lethedb/lethe/internal/dirlock"
	"github.com/lethedb/lethe/internal/vfs"
)

// DatabaseCheck is what CheckDir found of one database of a data
// directory.
type DatabaseCheck struct {
	ID       string             // the database's id, "" if its meta file cannot be read
	Dir      string             // its directory
	Recovery lethe.RecoveryInfo // what opening its store would do (lethe.Check)
	Err      error              // why New could not open it; nil if it could
}

// CheckDir checks a Config.Dir as New would open it, and changes nothing:
// every database's meta file, users, partition key ranges and store (lethe.Check: every
// checksum, and what recovery would do). It returns a DatabaseCheck for
// each database, in the order of their directories, and the directories
// New would remove (what an interrupted create or delete left). A
// directory in use by a running handler fails with lethe.ErrLocked.
func CheckDir(dir string) (dbs []DatabaseCheck, leftovers []string, err error) {
	if _, err := os.Stat(filepath.Join(dir, "LOCK")); err == nil {
		lock, err := dirlock.Lock(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("cosmosrest: %s: %w", dir, err)
		}
		defer dirlock.Unlock(lock)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("cosmosrest: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("cosmosrest: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".tmp-db-") {
			leftovers = append(leftovers, full)
			continue
		}
		if !e.IsDir() || !strings.HasPrefix(name, "db-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(full, metaFile))
		if errors.Is(err, fs.ErrNotExist) {
			leftovers = append(leftovers, full)
			continue
		}
		d := DatabaseCheck{Dir: full}
		var m dbMeta
		switch {
		case err != nil:
			d.Err = err
		case json.Unmarshal(b, &m) != nil || m.ID == "" || dbDirName(m.ID) != name:
			d.Err = fmt.Errorf("%s is damaged", filepath.Join(full, metaFile))
		default:
			d.ID = m.ID
			if _, err := loadUsers(vfs.OS, full); err != nil {
				d.Err = err
			} else if err := checkLayouts(vfs.OS, full); err != nil {
				d.Err = err
			} else if _, _, _, err := loadConflicts(vfs.OS, full); err != nil {
				d.Err = err
			} else {
				d.Recovery, d.Err = lethe.Check(filepath.Join(full, "store"))
			}
		}
		dbs = append(dbs, d)
	}
	return dbs, leftovers, nil
}
