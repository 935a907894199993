package main

import (
	"context"
	"fmt"
	"io"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d, err := parseMigrateFlags(args, stdout)
	if err != nil {
		return err
	}
	return migrate(ctx, d, stdout)
}

// parseMigrateFlags reads the command line (and the flags' environment
// twins) into the database to migrate; any mistake is a usage error.
func parseMigrateFlags(args []string, stdout io.Writer) (dbFlags, error) {
	var (
		d  dbFlags
		fs = newFlagSet("migrate", "loremnews migrate [--db PATH]",
			"Create the database if needed and apply the schema migrations embedded in this binary.\n"+
				"(serve and seed do this too, on every start.)", stdout)
	)
	d.registerDB(fs)
	if err := fs.parse(args); err != nil {
		return d, err
	}
	return d, d.validate(fs)
}

// migrate opens (creating and migrating) the database and lists the
// migrations applied.
func migrate(ctx context.Context, d dbFlags, stdout io.Writer) error {
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
