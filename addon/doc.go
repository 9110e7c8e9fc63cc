// Package addon holds Hearth's Home Assistant add-on: this directory is an
// add-on repository (repository.yaml) with one add-on in hearth/
// (config.yaml, Dockerfile, DOCS.md, README.md, CHANGELOG.md, icons and
// translations). It has no Go code of its own; its tests check the add-on
// files against the add-on linter's schema and rules, the Supervisor's
// option handling, the options package and the binary's version.
//
// The Supervisor reads repository.yaml only at the root of a git
// repository, so this directory is published as its own repository; the
// image is built from the root of this one (see hearth/Dockerfile).
//
// testdata/addon-lint.schema.json is an unchanged copy of the linter's
// published schema; testdata/addon-lint.md records its source, digest and
// licence, and a test holds the copy to that digest. The copy's name must
// not start with "config.": the Supervisor reads every config.* file in the
// repository as an add-on.
package addon
