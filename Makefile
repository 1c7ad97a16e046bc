# sandboxd — plain GNU make on pkg-config.
#
#   make                      build build/<variant>/sandboxd and sandboxctl
#   make check                unit tests (check) + integration tests (real daemon)
#   make SANITIZE=address,undefined check
#   make install PREFIX=/usr/local DESTDIR=...
#   make format / format-check
#
# Sources are picked up by wildcard per module so new files need no Makefile edit:
# protocol/*.c policy/*.c backends/*.c backends/*/*.c (a backend's folder) daemon/*.c (minus
# main.c) form libsandboxd.a; backends/agent/prog/*.c is sandboxd-agent; every
# tests/unit/check_*.c becomes one test binary linked against it.

PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
SBINDIR   ?= $(PREFIX)/sbin
MANDIR    ?= $(PREFIX)/share/man
LIBEXECDIR ?= $(PREFIX)/libexec
# The configuration goes under the prefix (make install PREFIX=$$HOME/.local needs no root),
# except for the system prefixes, whose configuration lives in /etc (FHS).
SYSCONFDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR   ?= $(PREFIX)/lib/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DESTDIR   ?=

CC        ?= cc
PKG_CONFIG ?= pkg-config
VERSION   := 0.1.0
PKGS      := libuv jansson libcurl libssh libsystemd inih
# Linked: libcurl is loaded with dlopen on first use (backends/http.c) and libssh has no user
# yet, so neither (nor their TLS stacks) weighs on a daemon that does not need them.
LINK_PKGS := libuv jansson libsystemd inih
CHECK_PKG := check

ifeq ($(SANITIZE),)
VARIANT   := std
SANFLAGS  :=
else
VARIANT   := san
SANFLAGS  := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
B         := build/$(VARIANT)

WARN      := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wmissing-prototypes \
             -Wstrict-prototypes -Wformat=2 -Wvla
CFLAGS    ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) $(SANFLAGS) -D_GNU_SOURCE \
             -DSANDBOXD_VERSION='"$(VERSION)"' -DSANDBOXD_LIBEXECDIR='"$(LIBEXECDIR)/sandboxd"' \
             -DSANDBOXD_SYSCONFDIR='"$(SYSCONFDIR)"' \
             -I. $(shell $(PKG_CONFIG) --cflags $(PKGS))
LIBS      := $(shell $(PKG_CONFIG) --libs $(LINK_PKGS)) -lutil -ldl
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(CHECK_PKG) 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs $(CHECK_PKG) 2>/dev/null)
LDFLAGS   ?=
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)

LIB_SRC   := $(sort $(wildcard protocol/*.c policy/*.c backends/*.c backends/*/*.c) \
             $(filter-out daemon/main.c,$(wildcard daemon/*.c)))
CLIENT_SRC := $(sort $(wildcard client/*.c))
TEST_SRC  := $(sort $(wildcard tests/unit/check_*.c))
TEST_HELPER_SRC := $(sort $(wildcard tests/unit/helper_*.c))
BENCH_SRC := $(sort $(filter-out bench/helper_%,$(wildcard bench/*.c)))
BENCH_HELPER_SRC := $(sort $(wildcard bench/helper_*.c))

LIB_OBJ   := $(LIB_SRC:%.c=$(B)/%.o)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(B)/%.o)
TEST_BIN  := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
TEST_HELPER_OBJ := $(TEST_HELPER_SRC:%.c=$(B)/%.o)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
BENCH_HELPER_OBJ := $(BENCH_HELPER_SRC:%.c=$(B)/%.o)
LIBA      := $(B)/libsandboxd.a

SANDBOXD  := $(B)/sandboxd
SANDBOXCTL := $(B)/sandboxctl
# The sandboxes' resident exec agent: static, libc only, never sanitized (it runs inside
# containers of any distribution; see backends/agent/proto.h).
AGENT     := $(B)/sandboxd-agent
AGENT_SRC := $(sort $(wildcard backends/agent/prog/*.c)) protocol/sha256.c
# The set-up stage of an isolated local sandbox, run in its new namespaces, whose PID 1 then
# goes on as the agent (the agent's code without its entry.c: no second exec, no second libc
# start-up): static, libc only, never sanitized (backends/local/init/nsinit.h).
NSBOX     := $(B)/sandboxd-nsbox
NSBOX_SRC := $(sort $(wildcard backends/local/init/*.c)) \
             $(filter-out backends/agent/prog/entry.c,$(AGENT_SRC))

# bench_local's stand-in for Codex CLI's codex-linux-sandbox (bench/codex/stage.c): static musl
# like Codex's own Linux binary, never sanitized (it runs inside bwrap), installed nowhere.
CODEX_STAGE := $(B)/bench/codex-stage
CODEX_STAGE_SRC := $(sort $(wildcard bench/codex/*.c))

ALL_SRC   := $(LIB_SRC) $(CLIENT_SRC) $(TEST_SRC) $(TEST_HELPER_SRC) $(BENCH_SRC) \
             $(BENCH_HELPER_SRC) daemon/main.c \
             $(AGENT_SRC) $(NSBOX_SRC) $(CODEX_STAGE_SRC)
FMT_SRC   := $(sort $(ALL_SRC) $(wildcard */*.h */*/*.h */*/*/*.h tests/*/*.h tests/fakes/*.c \
             tests/oracle/*.c fuzz/*.c))

.PHONY: all check unit-build unit-check integration-check bench install uninstall format \
        format-check clean fuzz fuzz-build fuzz-corpus fuzz-run-policy fuzz-run-container \
        fuzz-run-shell

BINS      := $(SANDBOXD) $(if $(CLIENT_SRC),$(SANDBOXCTL)) $(AGENT) $(NSBOX)

all: $(BINS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -MMD -MP -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SANDBOXD): $(B)/daemon/main.o $(LIBA)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(SANDBOXCTL): $(CLIENT_OBJ) $(LIBA)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(AGENT): $(AGENT_SRC) backends/agent/proto.h backends/agent/prog/agent.h protocol/sha256.h \
		backends/shell_init.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -Os -static -D_GNU_SOURCE -I. -o $@ $(AGENT_SRC)

$(NSBOX): $(NSBOX_SRC) backends/local/init/nsinit.h backends/local/init/nsinit_int.h \
		backends/agent/proto.h backends/agent/prog/agent.h protocol/sha256.h \
		backends/shell_init.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -Os -static -D_GNU_SOURCE -I. -o $@ $(NSBOX_SRC)

# check_agent and check_session drive the built agent.
$(B)/tests/check_agent $(B)/tests/check_session: | $(AGENT)
# check_agent_oom tests the agent's cgroup counters (libc only) in-process.
$(B)/tests/check_agent_oom: $(B)/backends/agent/prog/oom.o

$(B)/tests/%: $(B)/tests/unit/%.o $(TEST_HELPER_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

$(B)/bench/%: $(B)/bench/%.o $(BENCH_HELPER_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# musl's headers lack the kernel's: linux/, asm/ and asm-generic/ alone are lent from the system.
$(B)/bench/kernel-include:
	@mkdir -p $@
	ln -sfn /usr/include/linux $@/linux
	ln -sfn /usr/include/asm-generic $@/asm-generic
	ln -sfn /usr/include/$(shell gcc -dumpmachine)/asm $@/asm

$(CODEX_STAGE): $(CODEX_STAGE_SRC) | $(B)/bench/kernel-include
	musl-gcc -std=gnu11 $(WARN) -O2 -static -D_GNU_SOURCE -isystem $(B)/bench/kernel-include \
		-o $@ $(CODEX_STAGE_SRC)

$(B)/bench/bench_local: | $(CODEX_STAGE)

check: unit-check integration-check

# Each unit test binary is a target of its own (unit-run-check_X): `make -j2 -Otarget
# unit-check` (scripts/test.sh) runs them side by side, each one's output whole. unit-build
# only builds them.
unit-build: $(TEST_BIN)

unit-check: $(TEST_BIN:$(B)/tests/%=unit-run-%)

unit-run-%: $(B)/tests/%
	@echo "== $<"; CK_FORK=yes $<

# SANDBOXD_TEST_JOBS=N runs the test classes in N worker processes (tests/integration/run.py).
integration-check: $(BINS)
	SANDBOXD_BIN=$(abspath $(SANDBOXD)) SANDBOXCTL_BIN=$(abspath $(SANDBOXCTL)) \
		/usr/bin/python3 tests/integration/run.py $(TESTS)
	SANDBOXD_BIN=$(abspath $(SANDBOXD)) sh tests/integration/systemd_verify.sh
	sh tests/integration/install_layout.sh

bench: $(BENCH_BIN) $(BINS)
	@set -e; for b in $(BENCH_BIN); do echo "== $$b"; SANDBOXD_BIN=$(abspath $(SANDBOXD)) $$b; done

install: $(BINS) install-data
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/sandboxd
	install -m 0755 $(SANDBOXD) $(DESTDIR)$(SBINDIR)/sandboxd
	install -m 0755 $(AGENT) $(DESTDIR)$(LIBEXECDIR)/sandboxd/sandboxd-agent
	install -m 0755 $(NSBOX) $(DESTDIR)$(LIBEXECDIR)/sandboxd/sandboxd-nsbox
	$(if $(CLIENT_SRC),install -m 0755 $(SANDBOXCTL) $(DESTDIR)$(BINDIR)/sandboxctl)

uninstall: uninstall-data
	rm -f $(DESTDIR)$(SBINDIR)/sandboxd $(DESTDIR)$(BINDIR)/sandboxctl \
		$(DESTDIR)$(LIBEXECDIR)/sandboxd/sandboxd-agent \
		$(DESTDIR)$(LIBEXECDIR)/sandboxd/sandboxd-nsbox
	-rmdir $(DESTDIR)$(LIBEXECDIR)/sandboxd 2>/dev/null

UNIT_SED  := -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
             -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

.PHONY: install-data uninstall-data systemd-verify

install-data:
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSCONFDIR)/sandboxd
	sed $(UNIT_SED) contrib/systemd/sandboxd.service.in >$(DESTDIR)$(UNITDIR)/sandboxd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/sandboxd.service
	install -m 0644 contrib/systemd/sandboxd.socket $(DESTDIR)$(UNITDIR)/sandboxd.socket
	sed $(UNIT_SED) contrib/systemd/user/sandboxd.service.in \
		>$(DESTDIR)$(USERUNITDIR)/sandboxd.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/sandboxd.service
	install -m 0644 contrib/systemd/user/sandboxd.socket $(DESTDIR)$(USERUNITDIR)/sandboxd.socket
	install -m 0644 contrib/systemd/sandboxd.sysusers $(DESTDIR)$(SYSUSERSDIR)/sandboxd.conf
	install -m 0644 docs/man/sandboxctl.1 $(DESTDIR)$(MANDIR)/man1/sandboxctl.1
	install -m 0644 docs/man/sandboxd.conf.5 $(DESTDIR)$(MANDIR)/man5/sandboxd.conf.5
	install -m 0644 docs/man/sandboxd.8 $(DESTDIR)$(MANDIR)/man8/sandboxd.8
	install -m 0644 contrib/sandboxd.conf.example \
		$(DESTDIR)$(SYSCONFDIR)/sandboxd/sandboxd.conf.example

uninstall-data:
	rm -f $(DESTDIR)$(UNITDIR)/sandboxd.service $(DESTDIR)$(UNITDIR)/sandboxd.socket \
		$(DESTDIR)$(USERUNITDIR)/sandboxd.service $(DESTDIR)$(USERUNITDIR)/sandboxd.socket \
		$(DESTDIR)$(SYSUSERSDIR)/sandboxd.conf \
		$(DESTDIR)$(MANDIR)/man1/sandboxctl.1 $(DESTDIR)$(MANDIR)/man5/sandboxd.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/sandboxd.8 \
		$(DESTDIR)$(SYSCONFDIR)/sandboxd/sandboxd.conf.example
	-rmdir $(DESTDIR)$(SYSCONFDIR)/sandboxd 2>/dev/null

systemd-verify:
	SANDBOXD_BIN=$(abspath $(SANDBOXD)) sh tests/integration/systemd_verify.sh

format:
	clang-format -i $(FMT_SRC)

format-check:
	clang-format --dry-run --Werror $(FMT_SRC)

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)

# libFuzzer targets: the policy parser (build/fuzz/fuzz_policy) and the container checks with
# the HTTP helpers (build/fuzz/fuzz_container), each run for FUZZ_SECONDS, and the shell-state
# parser (build/fuzz/fuzz_shell) for FUZZ_SHELL_SECONDS.
FUZZ_SECONDS ?= 60
FUZZ_SHELL_SECONDS ?= 20
FUZZ_CC      ?= clang
FUZZ_SRC     := $(sort $(wildcard policy/*.c)) protocol/util.c protocol/error.c protocol/codec.c \
                protocol/sha256.c
FUZZ_FLAGS   := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I.
FUZZ_RUN     := -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048
FUZZ_SHELL_SRC := backends/shell_state.c protocol/util.c
# The three runs are independent targets: `make -j2 -Otarget fuzz` (scripts/test.sh) runs them
# side by side, each given the same time, and prints each one's output whole when it ends.
fuzz: fuzz-run-policy fuzz-run-container fuzz-run-shell

fuzz-build: build/fuzz/fuzz_policy build/fuzz/fuzz_container build/fuzz/fuzz_shell fuzz-corpus

fuzz-corpus:
	@mkdir -p build/fuzz/corpus build/fuzz/corpus_container build/fuzz/corpus_shell
	cp -n fuzz/corpus/* build/fuzz/corpus/ 2>/dev/null || true
	cp -n fuzz/corpus_container/* build/fuzz/corpus_container/ 2>/dev/null || true
	cp -n fuzz/corpus_shell/* build/fuzz/corpus_shell/ 2>/dev/null || true

fuzz-run-policy: build/fuzz/fuzz_policy fuzz-corpus
	build/fuzz/fuzz_policy $(FUZZ_RUN) -max_len=4096 build/fuzz/corpus

fuzz-run-container: build/fuzz/fuzz_container fuzz-corpus
	build/fuzz/fuzz_container $(FUZZ_RUN) -max_len=4096 -dict=fuzz/container.dict \
		build/fuzz/corpus_container

fuzz-run-shell: build/fuzz/fuzz_shell fuzz-corpus
	build/fuzz/fuzz_shell -max_total_time=$(FUZZ_SHELL_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		-max_len=8192 build/fuzz/corpus_shell

build/fuzz/fuzz_shell: fuzz/fuzz_shell.c $(FUZZ_SHELL_SRC) backends/shell.h backends/shell_init.h
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell $(PKG_CONFIG) --cflags jansson) -o $@ fuzz/fuzz_shell.c \
		$(FUZZ_SHELL_SRC) $(shell $(PKG_CONFIG) --libs jansson)

build/fuzz/fuzz_policy: fuzz/fuzz_policy.c $(FUZZ_SRC) $(wildcard policy/*.h)
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell $(PKG_CONFIG) --cflags jansson) -o $@ fuzz/fuzz_policy.c \
		$(FUZZ_SRC) $(shell $(PKG_CONFIG) --libs jansson)

build/fuzz/fuzz_container: fuzz/fuzz_container.c $(FUZZ_SRC) backends/http.c backends/http1.c \
		$(wildcard policy/*.h backends/http*.h)
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell $(PKG_CONFIG) --cflags jansson libuv libcurl) -o $@ \
		fuzz/fuzz_container.c $(FUZZ_SRC) backends/http.c backends/http1.c \
		$(shell $(PKG_CONFIG) --libs jansson libuv) -ldl
