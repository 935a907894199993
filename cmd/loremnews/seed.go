package main

import (
	"context"
	"io"
)

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		d  dbFlags
		s  seedFlags
		fs = newFlagSet("seed", "loremnews seed [--db PATH] [--seed N] [--users N] [--posts N]",
			"Replace all data in the database (creating and migrating it if needed) with the demo data set:\n"+
				"users whose password is \"password\", posts with lorem-ipsum text, 5–15 comments per post.", stdout)
	)
	d.register(fs)
	s.register(fs)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := d.validate(fs); err != nil {
		return err
	}
	if err := s.validate(fs); err != nil {
		return err
	}
	db, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	return s.load(ctx, db, stdout)
}
