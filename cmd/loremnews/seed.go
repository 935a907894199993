package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/bcrypt"
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
	start := time.Now()
	db, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	ds, err := s.load(ctx, db, bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seeded %s: %d users, %d posts, %d comments in %s (seed %d; every password is \"password\")\n",
		db.Path(), len(ds.Users), len(ds.Posts), len(ds.Comments), time.Since(start).Round(time.Millisecond), s.seed)
	return nil
}
