package main

import (
	"context"
	"fmt"
	"io"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		d  dbFlags
		fs = newFlagSet("migrate", "loremnews migrate [--db PATH]",
			"Create the database if needed and apply the schema migrations embedded in this binary.\n"+
				"(serve and seed do this too, on every start.)", stdout)
	)
	d.registerDB(fs)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := d.validate(fs); err != nil {
		return err
	}
	db, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrations(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s is at schema version %d:\n", db.Name(), len(applied))
	for _, m := range applied {
		fmt.Fprintf(stdout, "  %s\n", m)
	}
	return nil
}
