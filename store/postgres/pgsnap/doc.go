// Package pgsnap saves the data of a store/postgres schema and puts it
// back, in SQL, as a backup and a restore of the database would: a
// support package for the deterministic simulation (package sim), whose
// store-loss faults save a fenced store, empty it (a new data set, with a
// generation marker of its own) or put the saved state back under
// running sidecars. It is not part of the sidecar: the production store
// never snapshots itself, and nothing in cmd/fencegate imports it.
//
// A snapshot copies every data table of the store's schema (Tables: the
// generation marker in meta included, so a restore keeps the saved
// marker, as a restored backup does) into tables of the same shape in a
// backup schema, in one transaction; Restore replaces the store's rows by
// the saved ones in one transaction; Empty deletes them and writes a new
// generation marker. The schema's version table is the shape, not the
// data, and is left alone. The callers should have the store quiet (no
// transaction of it under way) while they run, as a restore of a
// database would.
package pgsnap
