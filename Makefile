# `make` builds libenvshim.so and envwrap (the static one too);
# `make install PREFIX=/usr/local DESTDIR=` installs them with the man pages and
# the example policies (ci/install says where each goes).
PREFIX ?= /usr/local

.PHONY: all build install static test
all: build

build:
	cargo build --release -p envshim
	cargo build --release -p envwrap
	ci/build-static

install:
	ci/install "$(PREFIX)"

static:
	ci/build-static

test:
	ci/test
