# `make` builds libenvshim.so and envwrap (the static one too);
# `make install PREFIX=/usr/local DESTDIR=` installs them with the man pages and
# the example policies (ci/install says where each goes). `make && sudo make
# install` builds as the user and installs as root: install builds only what is
# missing, so root needs no Rust toolchain.
PREFIX ?= /usr/local
# Cargo's target directory, as cargo computes it (CARGO_TARGET_DIR, else
# build.target-dir of a .cargo/config.toml, else target/): ci/build-static asks
# `cargo metadata`. Computed when first used, once.
TARGET_DIR = $(eval TARGET_DIR := $$(shell ci/build-static --print-target-dir))$(TARGET_DIR)
SHIM = $(TARGET_DIR)/release/libenvshim.so
STATIC = $(TARGET_DIR)/x86_64-unknown-linux-gnu/release/envwrap

.PHONY: all build install static test deb
all: build

build:
	cargo build --release -p envshim
	cargo build --release -p envwrap
	ci/build-static

install:
	@test -f "$(SHIM)" && test -f "$(STATIC)" || $(MAKE) build
	ENVSHIM_INSTALL_NO_BUILD=1 ci/install "$(PREFIX)"

static:
	ci/build-static

# target/debian/envshim_VERSION_ARCH.deb, with cargo-deb (ci/package).
deb:
	ci/package

test:
	ci/test
