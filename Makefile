# `make install PREFIX=/usr/local`: see ci/install.
PREFIX ?= /usr/local

.PHONY: install static test
install:
	ci/install "$(PREFIX)"

static:
	ci/build-static

test:
	ci/test
