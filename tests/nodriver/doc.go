// Package nodriver tests a program that embeds Mayfly without importing
// any storage driver (nodriver_test.go): it must link no driver, and an
// s3:// location must fail with an error that names the import to add.
// Nothing in this package, its tests included, may import storage/s3 or a
// package that does (internal/s3test).
package nodriver
