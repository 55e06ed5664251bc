# Tessera: one non-recursive build for libcommon, proto, every service, the CLI
# and the tests. `make` builds; `make test` installs what it needs and runs every
# test; `make dev-up` / `make dev-down` run the one-machine stack.

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
SAN      ?=
V        ?=
Q        := $(if $(V),,@)

.DEFAULT_GOAL := all

PKGS := rdkafka libmicrohttpd jansson libprotobuf-c libpq hiredis libcurl libsodium libsystemd

# Evaluated lazily so that `make deps` works before the -dev packages exist.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

OPT      ?= -O2
WARN     := -Wall -Wextra -Werror -Wno-format-zero-length -Wno-format-truncation -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-missing-field-initializers
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT      := -O1
endif
CFLAGS   ?=
CPPFLAGS += -D_GNU_SOURCE -I. -I$(BUILD)/gen -DTESSERA_VERSION='"$(VERSION)"'
ALL_CFLAGS = -std=gnu11 -g $(OPT) $(WARN) $(SANFLAGS) -MMD -MP -pthread $(PKG_CFLAGS) $(CFLAGS)
LDFLAGS  += $(SANFLAGS) -pthread
LDLIBS    = $(PKG_LIBS) -lm

VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

# ---- proto --------------------------------------------------------------------
PROTOS     := $(wildcard proto/tessera/v1/*.proto)
PROTO_C    := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
PROTO_H    := $(PROTO_C:.c=.h)
PROTO_OBJ  := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(PROTO_C))

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC  $<"
	$(Q)protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

# ---- libcommon ----------------------------------------------------------------
COMMON_SRC := $(wildcard libcommon/*.c)
COMMON_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(COMMON_SRC))
COMMON_LIB := $(BUILD)/lib/libtessera-common.a

$(COMMON_LIB): $(COMMON_OBJ) $(PROTO_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# Every object may include generated proto headers: generate them first.
$(BUILD)/obj/%.o: %.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Wno-missing-prototypes -c $< -o $@

# ---- services -----------------------------------------------------------------
# services/<name>/*.c -> $(BUILD)/bin/tessera-<name>; services/cli -> tessera;
# the development tools tools/devbus and tools/simagent -> tessera-devbus and
# tessera-simagent (daemons on libcommon's runtime like the services).
# A service with migrations/*.sql gets them embedded (tools/embed-migrations.sh).
# The agent's helper programs (tessera-sup, the CNI plugins tessera-bridge and
# tessera-portmap) and the CUDA shim have rules of their own below.
DAEMONS  := gateway auth registry scheduler agent vfolder wsproxy
DEVTOOLS := devbus simagent
SERVICES := $(DAEMONS) $(DEVTOOLS)
SERVICE_BINS := $(addprefix $(BUILD)/bin/tessera-,$(SERVICES))
CLI_BIN := $(BUILD)/bin/tessera

# $(1): name, $(2): binary, $(3): source folder
define service_rules
$(1)_SRC := $$(wildcard $(3)/*.c)
$(1)_SQL := $$(sort $$(wildcard $(3)/migrations/*.sql))
$(1)_OBJ := $$(patsubst %.c,$$(BUILD)/obj/%.o,$$($(1)_SRC)) \
            $$(if $$($(1)_SQL),$$(BUILD)/obj/gen/$(3)/migrations.o)
$$(BUILD)/gen/$(3)/migrations.c: $$($(1)_SQL) tools/embed-migrations.sh
	@mkdir -p $$(dir $$@)
	$(Q)sh tools/embed-migrations.sh $(1) $$($(1)_SQL) > $$@
$(2): $$($(1)_OBJ) $$(COMMON_LIB)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	$(Q)$$(CC) $$(LDFLAGS) -o $$@ $$($(1)_OBJ) $$(COMMON_LIB) $$(or $$($(1)_LDLIBS),$$(LDLIBS)) $$($(1)_LIBS)
endef
# tessera-devbus links librdkafka statically: it sets the mock cluster's log cap
# through the library's own (unexported) lookups (tools/devbus/retention.h).
# librdkafka.a's own dependencies by soname: Debian ships lz4, zstd and sasl2
# without their -dev links here.
devbus_LDLIBS = $(filter-out -lrdkafka,$(LDLIBS)) -Wl,-Bstatic -lrdkafka -Wl,-Bdynamic \
                -l:liblz4.so.1 -l:libzstd.so.1 -l:libsasl2.so.2 -lssl -lcrypto -lz -ldl -lm
$(foreach s,$(DAEMONS),$(eval $(call service_rules,$(s),$(BUILD)/bin/tessera-$(s),services/$(s))))
$(foreach s,$(DEVTOOLS),$(eval $(call service_rules,$(s),$(BUILD)/bin/tessera-$(s),tools/$(s))))
$(eval $(call service_rules,cli,$(CLI_BIN),services/cli))

# ---- example configs, generated from each service's config table -------------
EXAMPLE_CONFS := $(patsubst %,$(BUILD)/etc/tessera/%.conf,$(SERVICES))
$(BUILD)/etc/tessera/%.conf: $(BUILD)/bin/tessera-%
	@mkdir -p $(dir $@)
	$(Q)$< --print-config-example > $@

# ---- CUDA shim (libtessera-cuda.so) ----------------------------------------------
# services/cuda-shim/*.c -> $(BUILD)/lib/libtessera-cuda.so: self-contained
# (no libcommon, no sanitizers: it is preloaded into arbitrary processes), hidden
# visibility except the hooks in exports.map. `make test-shim` builds a fake
# libcuda.so.1 / libnvidia-ml.so.1 (tests/shim/) and runs programs under the shim;
# `make bench-shim` compares hooked and direct calls (callgrind + wall clock).
CUDA_HOME   ?= /usr/local/cuda
SHIM_DIR    := services/cuda-shim
SHIM_SRC    := $(wildcard $(SHIM_DIR)/*.c)
SHIM_OBJ    := $(patsubst %.c,$(BUILD)/shim/obj/%.o,$(SHIM_SRC))
SHIM_LIB    := $(BUILD)/lib/libtessera-cuda.so
SHIM_CFLAGS := -std=gnu11 -g -O2 -fPIC -fvisibility=hidden -fno-strict-aliasing \
               -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
               -Wno-missing-field-initializers -MMD -MP -pthread -D_GNU_SOURCE -I. \
               -isystem $(CUDA_HOME)/include
SHIM_TDIR   := $(BUILD)/shim/tests
SHIM_FAKES  := $(SHIM_TDIR)/fake/libcuda.so.1 $(SHIM_TDIR)/fake/libnvidia-ml.so.1
SHIM_TBINS  := $(SHIM_TDIR)/scenarios $(SHIM_TDIR)/unit $(SHIM_TDIR)/region_tool $(SHIM_TDIR)/bench

$(BUILD)/shim/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(SHIM_CFLAGS) -c $< -o $@

$(SHIM_LIB): $(SHIM_OBJ) $(SHIM_DIR)/exports.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -pthread -Wl,-soname,libtessera-cuda.so -Wl,-z,defs -Wl,--as-needed \
	  -Wl,--version-script=$(SHIM_DIR)/exports.map -o $@ $(SHIM_OBJ) -ldl

$(SHIM_TDIR)/fake/libcuda.so.1: $(BUILD)/shim/obj/tests/shim/fake_cuda.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -pthread -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o $@ $< -ldl

$(SHIM_TDIR)/fake/libnvidia-ml.so.1: $(BUILD)/shim/obj/tests/shim/fake_nvml.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-Bsymbolic -o $@ $<

$(SHIM_TDIR)/scenarios: $(BUILD)/shim/obj/tests/shim/scenarios.o $(SHIM_FAKES)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -pthread -o $@ $< $(SHIM_FAKES) -ldl

$(SHIM_TDIR)/bench: $(BUILD)/shim/obj/tests/shim/bench.o $(SHIM_TDIR)/fake/libcuda.so.1
	@mkdir -p $(dir $@)
	$(Q)$(CC) -pthread -o $@ $< $(SHIM_TDIR)/fake/libcuda.so.1

$(SHIM_TDIR)/unit: $(BUILD)/shim/obj/tests/shim/unit.o $(BUILD)/shim/obj/$(SHIM_DIR)/config.o \
                   $(BUILD)/shim/obj/$(SHIM_DIR)/allocmap.o $(BUILD)/shim/obj/$(SHIM_DIR)/region.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) -pthread -o $@ $^

$(SHIM_TDIR)/region_tool: $(BUILD)/shim/obj/tests/shim/region_tool.o \
                          $(BUILD)/shim/obj/$(SHIM_DIR)/config.o $(BUILD)/shim/obj/$(SHIM_DIR)/region.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) -pthread -o $@ $^

.PHONY: shim test-shim bench-shim
# the fakes and the bench's binary too: the bench's smoke run
# (tests/integration/test_bench_smoke.py) runs them in the integration tier
all: $(if $(wildcard $(CUDA_HOME)/include/cuda.h),$(SHIM_LIB) $(SHIM_FAKES) $(SHIM_TDIR)/bench)
shim: $(SHIM_LIB)

test-shim: $(SHIM_LIB) $(SHIM_FAKES) $(SHIM_TBINS)
	@sh tests/shim/run.sh $(BUILD)

bench-shim: $(SHIM_LIB) $(SHIM_FAKES) $(SHIM_TDIR)/bench
	@sh tests/shim/bench.sh $(BUILD)

-include $(shell find $(BUILD)/shim/obj -name '*.d' 2>/dev/null)
# ---- end CUDA shim ---------------------------------------------------------------

# ---- unit tests (cmocka) ------------------------------------------------------
# tests/unit/<part>/test_*.c -> $(BUILD)/tests/<part>/test_*: <part> is
# libcommon, or a folder of services/ whose modules (every .c but main.c) the
# test links too, with that part's extra libraries (<part>_LIBS). The other
# .c files of tests/unit/<part>/ are test helpers (fixtures shared by that
# part's tests), linked into each of its tests.
UNIT_SRC  := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
unit_helpers = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out tests/unit/$(1)/test_%,$(wildcard tests/unit/$(1)/*.c)))
libcommon_TEST_OBJ := $(call unit_helpers,libcommon)
$(BUILD)/tests/libcommon/%: $(BUILD)/obj/tests/unit/libcommon/%.o $(libcommon_TEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(libcommon_TEST_OBJ) $(COMMON_LIB) $(LDLIBS) -lcmocka

.SECONDARY:
.PHONY: all deps test check unit integration asan shim-skipped install dev-up dev-down clean fmt fmt-check
all: $(COMMON_LIB) $(SERVICE_BINS) $(CLI_BIN) $(EXAMPLE_CONFS) $(UNIT_BINS)

deps:
	@sh tools/deps.sh

# `make test`: what a person types on a fresh machine.
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory check

# `make check`: every tier, in two lanes (tools/run-check.sh): the integration
# tier, the longest, in the background (its output in build/check/background.log,
# printed whole when it ends), the others one after another meanwhile; a table
# of each tier's result and minutes at the end. Every tier runs even after one
# failed. CHECK_LANES=1: all in one lane, in this order.
CHECK_BG := integration
CHECK_FG := lint unit browser compat compat-py security faults-smoke asan \
            $(if $(wildcard $(CUDA_HOME)/include/cuda.h),test-shim,shim-skipped) fuzz-smoke
check: all
	@MAKE="$(MAKE)" sh tools/run-check.sh "$(CHECK_BG)" "$(CHECK_FG)"

# `make lint`: the tree is clang-formatted, and its shape holds (tools/structure.py:
# no include or call cycle between a folder's files, no C file over 800 lines,
# every bool function TS_MUST_CHECK). Needs the objects of `make all`. The
# console's JavaScript is checked too (console-lint: Prettier and ESLint).
.PHONY: lint structure
lint: fmt-check structure console-lint
structure: all
	@python3 tools/structure.py --build $(BUILD)

shim-skipped:
	@echo "test-shim: skipped: no CUDA toolkit at $(CUDA_HOME) (cuda.h)"

# The console's unit tests (console-unit) run with the C ones, once: not again
# in the sanitizer build of `make asan`.
unit: $(UNIT_BINS) $(if $(SAN),,console-unit)
	@sh tools/run-unit.sh $(UNIT_BINS)

integration: all
	@sh tools/run-integration.sh

# `make browser`: the web console in headless Chromium against a temporary
# stack (tests/browser, tools/run-browser.sh); screenshots in
# build/console-screenshots/.
.PHONY: browser
browser: all
	@sh tools/run-browser.sh

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 unit

# ---- compatibility suite ----------------------------------------------------------
# `make compat`: Backend.AI's JavaScript SDK (npm backend.ai-client 21.3.1, pinned by
# tests/compat/package-lock.json, fetched once into tests/compat/node_modules) called
# through each of its public methods against a temporary stack (tests/compat,
# tools/run-compat.sh); each outcome is compared with tests/compat/expected.txt.
# Prints a table and "compat: N/T methods ok, M not served yet (listed), K unexpected".
COMPAT_DEPS := tests/compat/node_modules/.package-lock.json
$(COMPAT_DEPS): tests/compat/package-lock.json
	@echo "  NPM     tests/compat (npm ci)"
	$(Q)cd tests/compat && npm ci --no-audit --no-fund --loglevel=error
	$(Q)touch $@
.PHONY: compat
compat: all $(COMPAT_DEPS)
	@sh tools/run-compat.sh
# `make compat-py`: Backend.AI's Python client 24.09.14 (the `backend.ai` CLI and its
# SDK, unchanged, from BAI_PY_CLIENT: ../shared/clients beside the repository) called
# command by command, in API and in session mode, against a temporary stack
# (tests/compat_py, tools/run-compat-py.sh); each outcome is compared with
# tests/compat_py/expected.txt. Skipped, saying so, when the client is absent.
BAI_PY_CLIENT ?= $(CURDIR)/../shared/clients/backend.ai-python-24.09
.PHONY: compat-py
compat-py: all
	@BAI_PY_CLIENT="$(BAI_PY_CLIENT)" sh tools/run-compat-py.sh
# ---- end compatibility suite ------------------------------------------------------

# ---- security suite ------------------------------------------------------------
# `make security`: tests/security/ (tools/run-security.sh) as a tenant inside
# real sessions on a temporary stack; prints a table and "N passed, M failed".
# Its probe (tests/security/probe*.c, one program) is a static binary put into
# a test image, so it needs only gcc and libc6-dev (glibc's static libc).
SEC_PROBE := $(BUILD)/security/probe
SEC_PROBE_SRC := $(wildcard tests/security/probe*.c)
$(SEC_PROBE): $(SEC_PROBE_SRC) $(wildcard tests/security/probe*.h)
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (static)"
	$(Q)$(CC) -std=gnu11 -O2 -static -Wall -Wextra -Werror -o $@ $(SEC_PROBE_SRC)
.PHONY: security
security: all $(SEC_PROBE)
	@TESSERA_BIN_DIR=$${TESSERA_BIN_DIR:-$(abspath $(BUILD))/bin} TESSERA_SECURITY_PROBE=$(abspath $(SEC_PROBE)) \
	  sh tools/run-security.sh
# ---- end security suite --------------------------------------------------------

# ---- fault suite ----------------------------------------------------------------
# `make test-faults`: tests/faults/ (tools/run-faults.sh, docs/reliability.md):
# sessions driven through the API on a temporary stack while every fault is
# applied in turn (kill -9 of each service, Redis FLUSHALL, PostgreSQL stopped
# 30 s, the bus's brokers down 30 s, a full vfolder volume); a table per fault
# and "N passed, M failed". `make faults-smoke` (part of `make check`): kill -9
# of the registry and the agent, FLUSHALL, PostgreSQL and the bus 10 s each.
.PHONY: test-faults faults-smoke
test-faults: all
	@TESSERA_BIN_DIR=$${TESSERA_BIN_DIR:-$(abspath $(BUILD))/bin} TESSERA_FAULTS=$${TESSERA_FAULTS:-all} \
	  sh tools/run-faults.sh
faults-smoke: all
	@TESSERA_BIN_DIR=$${TESSERA_BIN_DIR:-$(abspath $(BUILD))/bin} TESSERA_FAULTS=smoke sh tools/run-faults.sh
# ---- end fault suite ------------------------------------------------------------

dev-up: deps
	@$(MAKE) --no-print-directory all
	@sh deploy/dev/dev-up.sh
	@if [ "$${TESSERA_DEV_SMOKE:-1}" != 0 ]; then sh deploy/dev/smoke.sh; fi

dev-down:
	@sh deploy/dev/dev-down.sh

# tessera-term, tessera-portmap, tessera-bridge and tessera-sup go next to
# tessera-agent: agent.term_path's, agent.cni_portmap's and agent.cni_bridge's
# defaults look there, and the agent starts tessera-sup from there.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)/etc/tessera
	install -m 0755 $(SERVICE_BINS) $(CLI_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(TERM_BIN) $(PORTMAP_BIN) $(BRIDGE_BIN) $(SUP_BIN) $(DESTDIR)$(PREFIX)/bin/
	for u in deploy/systemd/*.service deploy/systemd/*.target; do \
	  sed 's|@BINDIR@|$(PREFIX)/bin|g' $$u > $(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); \
	  chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); done
	install -m 0644 $(EXAMPLE_CONFS) $(DESTDIR)/etc/tessera/
	if [ -f $(SHIM_LIB) ]; then install -d $(DESTDIR)$(PREFIX)/lib/tessera && \
	  install -m 0644 $(SHIM_LIB) $(DESTDIR)$(PREFIX)/lib/tessera/; fi

fmt: console-fmt
	clang-format -i $$(git ls-files '*.c' '*.h')

fmt-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h') && echo "fmt-check: every C file is formatted"

clean:
	rm -rf $(BUILD) build-asan

# ---- fuzzing -----------------------------------------------------------------
# `make fuzz`: libFuzzer harnesses (fuzz/fuzz_*.c) for the parsers that take
# outside input, built with clang and ASan/UBSan into $(BUILD)/fuzz/ (their own
# libcommon and proto objects), then fuzz/run.sh replays fuzz/regressions/ and
# runs each for FUZZ_SECONDS from a scratch copy of fuzz/corpus/<name>/.
# `make fuzz-smoke`: the same, 10 s each.
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
# <name>=<max_len>: fuzz/fuzz_<name>.c
FUZZ_TARGETS  := config_file=4096 envelope=4096 http_router=2048 cni_conf=4096 svcauth=2048 \
                 http_front=4096 http1=4096 image_ref=1200 exec_req=4096 gql=8192 sso_token=9000 \
                 ws=4096 gql_filter=1200
FUZZ_NAMES    := $(foreach t,$(FUZZ_TARGETS),$(firstword $(subst =, ,$(t))))
FUZZ_BINS     := $(patsubst %,$(BUILD)/fuzz/bin/fuzz_%,$(FUZZ_NAMES))
FUZZ_COMMON   := common log config config_file envelope http_resp http_router http_server http_request http_workers http_events buf svcauth \
                 http1 http_front image_ref exec_req deps metrics http_upgrade ws wsframe \
                 http_body_watch net_listen utf8 http_tls http_mhd
FUZZ_LIB_OBJ  := $(patsubst %,$(BUILD)/fuzz/obj/libcommon/%.o,$(FUZZ_COMMON)) \
                 $(patsubst $(BUILD)/gen/%.c,$(BUILD)/fuzz/obj/gen/%.o,$(PROTO_C))
FUZZ_PKGS     := libmicrohttpd jansson libprotobuf-c libsodium
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS    = -std=gnu11 -g -O1 $(FUZZ_SAN) -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
                 -Wmissing-prototypes -Wno-missing-field-initializers -MMD -MP -pthread \
                 $(shell pkg-config --cflags $(FUZZ_PKGS) 2>/dev/null)
FUZZ_LIBS      = $(shell pkg-config --libs $(FUZZ_PKGS) 2>/dev/null) -lm

$(BUILD)/fuzz/obj/libcommon/%.o: libcommon/%.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# the agent's CNI plugins' configuration parsers (fuzz_cni_conf)
FUZZ_CNI_OBJ  := $(patsubst %,$(BUILD)/fuzz/obj/services/%.o,cni-portmap/pm_conf cni-bridge/br_conf) \
                 $(BUILD)/fuzz/obj/libcommon/cnip.o
$(BUILD)/fuzz/obj/services/%.o: services/%.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/bin/fuzz_cni_conf: $(FUZZ_CNI_OBJ)
# the gateway's GraphQL document parser (fuzz_gql)
$(BUILD)/fuzz/bin/fuzz_gql: $(BUILD)/fuzz/obj/services/gateway/gql_parse.o
# Backend.AI's filter and order arguments of GraphQL lists (fuzz_gql_filter)
$(BUILD)/fuzz/bin/fuzz_gql_filter: $(BUILD)/fuzz/obj/services/gateway/gql_filter.o
# tessera-auth's single sign-on tokens (fuzz_sso_token)
$(BUILD)/fuzz/bin/fuzz_sso_token: $(BUILD)/fuzz/obj/services/auth/sso_token.o

$(BUILD)/fuzz/obj/gen/%.o: $(BUILD)/gen/%.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -Wno-missing-prototypes -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/obj/fuzz/%.o: fuzz/%.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/bin/fuzz_%: $(BUILD)/fuzz/obj/fuzz/fuzz_%.o $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  FUZZLD  $@"
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -pthread -o $@ $^ $(FUZZ_LIBS)

.PHONY: fuzz fuzz-smoke fuzz-build
fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@sh fuzz/run.sh $(BUILD)/fuzz/bin $(BUILD)/fuzz/work $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10

-include $(shell find $(BUILD)/fuzz/obj -name '*.d' 2>/dev/null)

# ---- bench-gateway -------------------------------------------------------------
# `make bench-gateway`: signed requests/s and latency of tessera-gateway against
# nginx serving a static file, with wrk, on this machine (bench/gateway/README.md).
.PHONY: bench-gateway
bench-gateway: deps
	@$(MAKE) --no-print-directory $(SERVICE_BINS)
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin sh bench/gateway/run.sh
# ---- end bench-gateway ---------------------------------------------------------

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- service unit tests --------------------------------------------------------
agent_LIBS := -larchive
define service_test_rules
$(1)_MOD_OBJ := $$(patsubst %.c,$$(BUILD)/obj/%.o,$$(filter-out %/main.c,$$(wildcard services/$(1)/*.c)))
$(1)_TEST_OBJ := $$(call unit_helpers,$(1))
$$(BUILD)/tests/$(1)/%: $$(BUILD)/obj/tests/unit/$(1)/%.o $$($(1)_TEST_OBJ) $$($(1)_MOD_OBJ) $$(COMMON_LIB)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	$$(Q)$$(CC) $$(LDFLAGS) -o $$@ $$< $$($(1)_TEST_OBJ) $$($(1)_MOD_OBJ) $$(COMMON_LIB) $$(LDLIBS) \
	  $$($(1)_LIBS) -lcmocka
endef
$(foreach s,agent registry scheduler vfolder wsproxy gateway auth cni-portmap cni-bridge,\
  $(eval $(call service_test_rules,$(s))))
SCHED_LIB_OBJ := $(scheduler_MOD_OBJ)
# test_gpu_nvml dlopens the shim tests' fake libnvidia-ml.so.1 (needs CUDA headers;
# without them it skips what needs the fake).
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
$(BUILD)/tests/agent/test_gpu_nvml: | $(SHIM_TDIR)/fake/libnvidia-ml.so.1
endif

# ---- bench-scheduler-core -----------------------------------------------------
# `make bench-scheduler-core`: the scheduler's engine alone and with Redis
# reservation (a redis-server it starts on a free port), 1,000 agents x 8 GPUs,
# 20,000 mixed requests; prints a table and checks the Redis invariant.
BENCH_SCHED_BIN := $(BUILD)/bench/bench_placement
BENCH_SCHED_WORKLOAD := $(BUILD)/obj/bench/scheduler/workload.o
$(BENCH_SCHED_BIN): $(BUILD)/obj/bench/scheduler/bench_placement.o $(BENCH_SCHED_WORKLOAD) \
		$(SCHED_LIB_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BENCH_SCHED_WORKLOAD) $(SCHED_LIB_OBJ) $(COMMON_LIB) $(LDLIBS)

.PHONY: bench-scheduler-core
bench-scheduler-core: $(BENCH_SCHED_BIN)
	@$(BENCH_SCHED_BIN)
# built by `make all` too, for its smoke run (tests/integration/test_bench_smoke.py)
all: $(BENCH_SCHED_BIN)

# ---- images --------------------------------------------------------------------
# `make images`: the OCI images built here from Debian packages, as OCI image
# layouts in $(IMAGES_DIR): busybox (deploy/images/busybox.sh: seconds), python
# and jupyter (deploy/images/python.sh, jupyter.sh on deploy/images/lib.sh:
# mmdebstrap from the Debian mirror, a minute or two each; built once, again
# with REBUILD=1). Pushed as tessera/<name>:latest to $TESSERA_OCI_REGISTRY
# when it is set (plain HTTP: the development registry; `. .tessera-dev/env`
# first). Not part of `make test`. See docs/images.md.
IMAGES_DIR    ?= build/images
IMAGES_DEBIAN := python jupyter
IMAGES        := busybox $(IMAGES_DEBIAN)
.PHONY: images
images:
	@mkdir -p $(IMAGES_DIR)
	@sh deploy/images/busybox.sh $(IMAGES_DIR)/busybox
	@for i in $(IMAGES_DEBIAN); do \
	  if [ -n "$(REBUILD)" ] || [ ! -s $(IMAGES_DIR)/$$i/index.json ]; then \
	    echo "$$i: mmdebstrap (a minute or two)"; sh deploy/images/$$i.sh $(IMAGES_DIR)/$$i || exit 1; fi; \
	  echo "$$i: $(IMAGES_DIR)/$$i ($$(python3 tools/oci-image.py digest $(IMAGES_DIR)/$$i))"; done
	@if [ -n "$$TESSERA_OCI_REGISTRY" ]; then \
	  for i in $(IMAGES); do python3 tools/oci-image.py push $(IMAGES_DIR)/$$i \
	    "$$TESSERA_OCI_REGISTRY/tessera/$$i:latest" --insecure || exit 1; done; \
	else echo "images: TESSERA_OCI_REGISTRY is not set: built, not pushed"; fi
# The Jupyter image, for the tests that open Jupyter through the proxy
# (tests/integration/test_jupyter_image.py, tests/browser): built once
# (mmdebstrap, a minute or two), kept in $(IMAGES_DIR).
JUPYTER_IMAGE := $(IMAGES_DIR)/jupyter/index.json
$(JUPYTER_IMAGE): deploy/images/jupyter.sh deploy/images/lib.sh
	@mkdir -p $(IMAGES_DIR)
	@echo "jupyter: mmdebstrap (a minute or two)"
	@sh deploy/images/jupyter.sh $(IMAGES_DIR)/jupyter
integration browser: $(JUPYTER_IMAGE)
# ---- end images ----------------------------------------------------------------

# ---- agent test tools ------------------------------------------------------------
# tests/tools/agent_testctl.c -> $(BUILD)/tests/tessera-agent-testctl: publishes
# agent commands described in JSON as protobuf envelopes and dumps topics as
# JSON lines, for tests/integration/test_agent_*.py.
AGENT_TESTCTL := $(BUILD)/tests/tessera-agent-testctl
$(AGENT_TESTCTL): $(BUILD)/obj/tests/tools/agent_testctl.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(COMMON_LIB) $(LDLIBS)
all: $(AGENT_TESTCTL)
# ---- end agent test tools --------------------------------------------------------

# ---- test tools -----------------------------------------------------------------
# tests/tools/busctl.c -> $(BUILD)/bin/tessera-busctl: publish events described as
# JSON (protobuf envelopes on the bus) and dump topics decoded as JSON
# (docs/testing.md). Built by `make all`; not installed.
BUSCTL_BIN := $(BUILD)/bin/tessera-busctl
$(BUILD)/gen/tests/tools/busctl_types.c: $(PROTOS) tests/tools/busctl-types.sh
	@mkdir -p $(dir $@)
	$(Q)sh tests/tools/busctl-types.sh $(PROTOS) > $@
$(BUSCTL_BIN): $(BUILD)/obj/tests/tools/busctl.o $(BUILD)/obj/gen/tests/tools/busctl_types.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/tests/tools/busctl.o \
	  $(BUILD)/obj/gen/tests/tools/busctl_types.o $(COMMON_LIB) $(LDLIBS)
.PHONY: tools
tools: $(BUSCTL_BIN)
all: $(BUSCTL_BIN)
# ---- end test tools -------------------------------------------------------------

# ---- bench-scheduler -----------------------------------------------------------
# `make bench-scheduler`: the scheduler end to end (bench/scheduler/run.sh) with
# tessera-simagent (1,000 simulated agents x 8 GPUs). BENCH_VIA=api: the dev
# stack (auth, registry, scheduler, gateway), sessions enqueued with
# signed POST /session through the gateway (bench_api.py, 20,000 sessions; by
# default with the scheduler held during the enqueue and released after, so
# the API's create rate and the scheduler's rate on that backlog are both
# printed, BENCH_API_BACKLOG=0 not);
# bus: redis, devbus and the scheduler only, SessionEnqueued published
# directly (bench_e2e, 20,000); both (the default): bus, then api.
# Prints placements/s, enqueue-to-scheduled p50/p99 and checks the invariant
# (api: Redis reservations = occupancy = PostgreSQL kernels holding slots).
# See docs/benchmarks.md.
BENCH_E2E_BIN := $(BUILD)/bench/bench_e2e
$(BENCH_E2E_BIN): $(BUILD)/obj/bench/scheduler/bench_e2e.o $(BENCH_SCHED_WORKLOAD) \
		$(SCHED_LIB_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BENCH_SCHED_WORKLOAD) $(SCHED_LIB_OBJ) $(COMMON_LIB) $(LDLIBS)

# built by `make all` too: tests/integration/test_bench_scheduler_smoke.py runs
# the bench small in the integration tier
all: $(BENCH_E2E_BIN)
.PHONY: bench-scheduler
bench-scheduler: $(BENCH_E2E_BIN) $(BUILD)/bin/tessera-scheduler $(BUILD)/bin/tessera-simagent \
                 $(BUILD)/bin/tessera-devbus $(BUILD)/bin/tessera-auth $(BUILD)/bin/tessera-registry \
                 $(BUILD)/bin/tessera-gateway $(BUILD)/bin/tessera-busctl
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin BENCH_E2E=$(abspath $(BENCH_E2E_BIN)) \
	  sh bench/scheduler/run.sh
# `make bench-scheduler-smoke`: the API path small (100 agents, 2,000 sessions),
# what tests/integration/test_bench_scheduler_smoke.py runs in `make test`.
.PHONY: bench-scheduler-smoke
bench-scheduler-smoke: all
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin BENCH_E2E=$(abspath $(BENCH_E2E_BIN)) \
	  BENCH_VIA=api BENCH_AGENTS=100 BENCH_API_SESSIONS=2000 BENCH_USERS=5 BENCH_CLIENTS=8 \
	  BENCH_TIMEOUT=180 sh bench/scheduler/run.sh
# ---- end bench-scheduler -------------------------------------------------------

# ---- bench-scale ---------------------------------------------------------------
# `make bench-scale`: one scheduler and one registry with BENCH_AGENTS (10,000)
# simulated agents at 500 heartbeats/s and BENCH_SESSIONS (200,000) sessions
# through the API (bench/scale/run.sh over bench-scheduler's API path);
# BENCH_HOG=1 adds a CPU hog on one core. docs/benchmarks.md "Scale".
# `make bench-scale-smoke`: 500 agents, 5,000 sessions (what
# tests/integration/test_bench_scale_smoke.py runs).
BENCH_SCALE_DEPS := $(BENCH_E2E_BIN) $(BUILD)/bin/tessera-scheduler $(BUILD)/bin/tessera-simagent \
                    $(BUILD)/bin/tessera-devbus $(BUILD)/bin/tessera-auth \
                    $(BUILD)/bin/tessera-registry $(BUILD)/bin/tessera-gateway $(BUILD)/bin/tessera-busctl
.PHONY: bench-scale bench-scale-smoke
bench-scale: $(BENCH_SCALE_DEPS)
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin BENCH_E2E=$(abspath $(BENCH_E2E_BIN)) \
	  sh bench/scale/run.sh
bench-scale-smoke: $(BENCH_SCALE_DEPS)
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin BENCH_E2E=$(abspath $(BENCH_E2E_BIN)) \
	  BENCH_AGENTS=500 BENCH_SESSIONS=5000 BENCH_HEARTBEAT_INTERVAL=2s BENCH_USERS=5 \
	  BENCH_CLIENTS=8 BENCH_TIMEOUT=180 sh bench/scale/run.sh
# ---- end bench-scale -----------------------------------------------------------

# ---- bench-smoke -----------------------------------------------------------------
# `make bench-smoke`: every benchmark run small, for correctness, not speed
# (tests/integration/test_bench_smoke.py: gateway, session, wsproxy, vfolder,
# portmap, scheduler-core, shim; test_bench_scheduler_smoke.py: the API
# scheduling bench). Part of the integration tier of `make test`; this runs
# them alone. See docs/benchmarks.md, "Smoke runs".
.PHONY: bench-smoke
bench-smoke: all
	@sh tools/run-integration.sh tests/integration/test_bench_smoke.py \
	  tests/integration/test_bench_scheduler_smoke.py
# ---- end bench-smoke -------------------------------------------------------------

# ---- registry test tools ---------------------------------------------------------
# tests/tools/fake_agent.c -> $(BUILD)/tests/tools/fake_agent: agent, kernel and
# placement events on the bus, one per line, for tests/integration/test_registry_*.py.
FAKE_AGENT := $(BUILD)/tests/tools/fake_agent
$(FAKE_AGENT): $(BUILD)/obj/tests/tools/fake_agent.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(COMMON_LIB) $(LDLIBS)
all: $(FAKE_AGENT)
# ---- end registry test tools -----------------------------------------------------

# ---- bench-vfolder -------------------------------------------------------------
# tessera-vfolder's zip writer needs zlib (crc32); its unit tests link it too.
vfolder_LIBS += -lz
# `make bench-vfolder`: downloads (a 1 GiB file; 1,000 x 64 KiB files one by one
# and as one streamed zip) through tessera-vfolder against nginx serving the
# same files, and a 1 GiB tus upload against dd writing it locally, in the same
# run (bench/vfolder/run.sh, bench/vfolder/README.md). Prints a table; keeps
# disk use to about 2.2 GiB in a temporary directory that it removes.
.PHONY: bench-vfolder
bench-vfolder: $(SERVICE_BINS) $(CLI_BIN)
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin sh bench/vfolder/run.sh
# ---- end bench-vfolder ---------------------------------------------------------

# ---- bench-session -------------------------------------------------------------
# `make bench-session`: session create-to-RUNNING and destroy latency (p50/p99)
# through the signed API, 200 sessions one after another and 200 more 8 at a
# time, beside bare `runc run` of a bundle from the same busybox layer, in the
# same run on a temporary development stack (bench/session/run.sh; results in
# docs/benchmarks.md "Sessions"). Needs root (runc) and python3-requests.
.PHONY: bench-session
bench-session: $(SERVICE_BINS)
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin sh bench/session/run.sh
# ---- end bench-session ---------------------------------------------------------

# ---- bench-idle ----------------------------------------------------------------
# `make bench-idle`: the CPU an idle development stack uses, per process, over
# BENCH_IDLE_SECONDS (60) after BENCH_IDLE_SETTLE (20), from /proc CPU times
# (valid on a busy machine): Tessera's services and their total against the
# target (under 1% of one core), the dev bus, PostgreSQL and Redis apart
# (bench/idle/run.sh; results in docs/benchmarks.md "Idle stack"). Needs root
# (the agent's runc). tests/integration/test_bench_idle_smoke.py runs it small.
.PHONY: bench-idle
bench-idle: $(SERVICE_BINS) $(BUILD)/bin/tessera-devbus
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin sh bench/idle/run.sh
# ---- end bench-idle ------------------------------------------------------------

# ---- tessera-portmap -------------------------------------------------------------
# services/cni-portmap/*.c -> $(BUILD)/bin/tessera-portmap: the agent's CNI
# plugin that publishes service ports (docs/agent.md, "Networking"), installed
# next to tessera-agent, where agent.cni_portmap's default finds it. It links
# libcommon's archive (only the objects it uses: common, proc, cnip) and
# jansson only: it is exec'd on every kernel start and destroy, and every
# shared library adds to its start-up. tests/unit/cni-portmap/ link its modules.
PORTMAP_BIN     := $(BUILD)/bin/tessera-portmap
PORTMAP_MOD_OBJ := $(cni-portmap_MOD_OBJ)
PORTMAP_LIBS     = $(shell pkg-config --libs jansson 2>/dev/null)
$(PORTMAP_BIN): $(BUILD)/obj/services/cni-portmap/main.o $(PORTMAP_MOD_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/services/cni-portmap/main.o $(PORTMAP_MOD_OBJ) \
	  $(COMMON_LIB) $(PORTMAP_LIBS)
# the runtime's tests publish ports through it
$(BUILD)/tests/agent/test_runtime $(BUILD)/tests/agent/test_runtime_cost: | $(PORTMAP_BIN)
$(BUILD)/tests/agent/test_netfilter_host: | $(PORTMAP_BIN)
all: $(PORTMAP_BIN)
# `make bench-portmap`: CNI ADD/DEL wall time of tessera-portmap beside Debian's
# portmap on the same input, in the same run (bench/portmap/bench.py; needs root).
.PHONY: bench-portmap
bench-portmap: $(PORTMAP_BIN)
	@python3 bench/portmap/bench.py $(abspath $(PORTMAP_BIN))
# ---- end tessera-portmap ---------------------------------------------------------

# ---- tessera-bridge ----------------------------------------------------------------
# services/cni-bridge/*.c -> $(BUILD)/bin/tessera-bridge: the agent's CNI
# plugin that puts a kernel on the network's bridge (docs/agent.md,
# "Networking"), installed next to tessera-agent, where agent.cni_bridge's
# default finds it. Like tessera-portmap it links libcommon's archive and
# jansson only. tests/unit/cni-bridge/ link its modules.
BRIDGE_BIN     := $(BUILD)/bin/tessera-bridge
BRIDGE_MOD_OBJ := $(cni-bridge_MOD_OBJ)
$(BRIDGE_BIN): $(BUILD)/obj/services/cni-bridge/main.o $(BRIDGE_MOD_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/services/cni-bridge/main.o $(BRIDGE_MOD_OBJ) \
	  $(COMMON_LIB) $(PORTMAP_LIBS)
$(BUILD)/tests/agent/test_runtime $(BUILD)/tests/agent/test_runtime_cost: | $(BRIDGE_BIN)
$(BUILD)/tests/agent/test_netfilter_host: | $(BRIDGE_BIN)
all: $(BRIDGE_BIN)
# ---- end tessera-bridge ------------------------------------------------------------

# ---- tessera-sup -------------------------------------------------------------------
# services/agent/sup/main.c -> $(BUILD)/bin/tessera-sup: the per-kernel
# supervisor the agent starts with posix_spawn (docs/agent.md, "The
# supervisor"), installed next to tessera-agent, where the agent finds it. It
# links the agent's logs.c and libcommon's archive only.
SUP_BIN     := $(BUILD)/bin/tessera-sup
SUP_MOD_OBJ := $(BUILD)/obj/services/agent/logs.o
$(SUP_BIN): $(BUILD)/obj/services/agent/sup/main.o $(SUP_MOD_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(BUILD)/obj/services/agent/sup/main.o $(SUP_MOD_OBJ) $(COMMON_LIB)
$(BUILD)/tests/agent/test_runtime $(BUILD)/tests/agent/test_runtime_cost: | $(SUP_BIN)
$(BUILD)/bin/tessera-agent: | $(SUP_BIN)
all: $(SUP_BIN)
# ---- end tessera-sup ---------------------------------------------------------------

# ---- bench-wsproxy ---------------------------------------------------------------
# tessera-term: the built-in terminal app the agent mounts into
# images without one. Static, no libcommon: services/wsproxy/term/*.c with
# libcommon's wsframe.c and http1.c (no other libcommon; beyond libc, only
# libsodium's base64, which wsframe.c uses). Built by `make all`.
TERM_BIN := $(BUILD)/bin/tessera-term
TERM_SRC := $(wildcard services/wsproxy/term/*.c) libcommon/wsframe.c libcommon/http1.c
$(TERM_BIN): $(TERM_SRC) $(wildcard services/wsproxy/term/*.h) libcommon/wsframe.h \
		libcommon/http1.h
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (static)"
	$(Q)$(CC) -std=gnu11 -g -O2 -static -D_GNU_SOURCE -I. $(WARN) -o $@ $(TERM_SRC) -lsodium
all: $(TERM_BIN)
# its /proc parsers' unit test links term_proc.c alone (the pattern rule of
# tests/wsproxy/ links services/wsproxy/*.c, not term/)
$(BUILD)/tests/wsproxy/test_term_proc: $(BUILD)/obj/tests/unit/wsproxy/test_term_proc.o \
		$(BUILD)/obj/services/wsproxy/term/term_proc.o
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka
# the privileges test runs real kernels with the agent's helper programs
$(BUILD)/tests/agent/test_privileges: | $(PORTMAP_BIN) $(BRIDGE_BIN) $(SUP_BIN) $(TERM_BIN)
# so does the disk's (restarts, size limits)
$(BUILD)/tests/agent/test_runtime_disk: | $(PORTMAP_BIN) $(BRIDGE_BIN) $(SUP_BIN) $(TERM_BIN)

# `make bench-wsproxy`: wrk through tessera-wsproxy and through nginx as a reverse
# proxy to the same nginx static backend, in the same run; WebSocket echo
# round trips (p50/p99) direct, through nginx and through tessera-wsproxy
# (bench/wsproxy/README.md). Needs wrk, nginx, redis-server. The two
# WebSocket tools link libcommon's wsframe.c, hence libsodium (its base64).
BENCH_WS_BIN := $(BUILD)/bench/wsproxy
$(BENCH_WS_BIN)/ws_echo: bench/wsproxy/ws_echo.c bench/wsproxy/wsio.c libcommon/wsframe.c \
		libcommon/http1.c
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -std=gnu11 -g -O2 -pthread -D_GNU_SOURCE -I. $(WARN) -o $@ $^ -lsodium
$(BENCH_WS_BIN)/ws_rtt: bench/wsproxy/ws_rtt.c bench/wsproxy/wsio.c libcommon/wsframe.c \
		libcommon/http1.c
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -std=gnu11 -g -O2 -D_GNU_SOURCE -I. $(WARN) -o $@ $^ -lm -lsodium
# built by `make all` too, for the bench's smoke run (tests/integration/test_bench_smoke.py)
all: $(BENCH_WS_BIN)/ws_echo $(BENCH_WS_BIN)/ws_rtt
.PHONY: bench-wsproxy
bench-wsproxy: $(BUILD)/bin/tessera-wsproxy $(BENCH_WS_BIN)/ws_echo $(BENCH_WS_BIN)/ws_rtt
	@TESSERA_BIN_DIR=$(abspath $(BUILD))/bin BENCH_BIN_DIR=$(abspath $(BENCH_WS_BIN)) sh bench/wsproxy/run.sh
# ---- end bench-wsproxy -----------------------------------------------------------

# ---- web console ------------------------------------------------------------------
# The browser console (services/console, docs/console.md): preact + htm, xterm.js,
# tus-js-client, bundled by esbuild into static files the gateway serves at
# /console/. Needs node and npm (the packages are pinned in package-lock.json);
# without npm, `make all` skips it with a note. `make console` builds it alone.
CONSOLE_DIR  := $(BUILD)/console
CONSOLE_SRC  := $(shell find services/console/src -type f 2>/dev/null) services/console/build.mjs \
		services/console/package.json services/console/package-lock.json
CONSOLE_DEPS := services/console/node_modules/.package-lock.json
.PHONY: console console-skipped
console: $(CONSOLE_DIR)/index.html
$(CONSOLE_DEPS): services/console/package-lock.json
	@echo "  NPM     services/console (npm ci)"
	$(Q)cd services/console && npm ci --no-audit --no-fund --loglevel=error
	$(Q)touch $@
$(CONSOLE_DIR)/index.html: $(CONSOLE_SRC) $(CONSOLE_DEPS)
	@echo "  ESBUILD $(CONSOLE_DIR)"
	$(Q)cd services/console && node build.mjs --out $(abspath $(CONSOLE_DIR))
console-skipped:
	@echo "  SKIP    web console (npm not found: install node and npm, then make console)"
# `make console-lint` (part of `make lint`): the console's JavaScript is formatted
# as Prettier writes it (.prettierrc.json) and ESLint finds nothing
# (eslint.config.js), warnings included. `make console-fmt` (part of `make fmt`)
# formats it. `make console-unit` (part of `make unit`): its unit tests
# (services/console/test/*.test.js) with Node's own test runner. The tools are
# devDependencies pinned by package-lock.json, installed with the build's
# (CONSOLE_DEPS), so after the first `npm ci` they run offline.
CONSOLE_JS  := '*.js' '*.mjs' 'src/**/*.js' 'test/**/*.js'
# Both remember the files they found clean (by content) under node_modules/.cache,
# so a second run checks only what changed.
CONSOLE_PRETTIER_CACHE := --cache --cache-location node_modules/.cache/prettier/.prettier-cache
CONSOLE_ESLINT_CACHE   := --cache --cache-strategy content --cache-location node_modules/.cache/eslint/
CONSOLE_NPM := $(shell command -v npm 2>/dev/null)
.PHONY: console-lint console-fmt console-unit console-need-npm
console-need-npm:
	$(if $(CONSOLE_NPM),,@echo "console: npm not found: run tools/deps.sh (node and npm)" >&2; exit 1)
console-lint: console-need-npm $(CONSOLE_DEPS)
	@cd services/console && node_modules/.bin/prettier --check --log-level warn $(CONSOLE_PRETTIER_CACHE) $(CONSOLE_JS) && \
	  node_modules/.bin/eslint --max-warnings 0 $(CONSOLE_ESLINT_CACHE) . && \
	  echo "console-lint: the console's JavaScript is formatted (Prettier) and ESLint finds nothing"
console-fmt: console-need-npm $(CONSOLE_DEPS)
	cd services/console && node_modules/.bin/prettier --write --log-level warn $(CONSOLE_PRETTIER_CACHE) $(CONSOLE_JS)
console-unit: console-need-npm $(CONSOLE_DEPS)
	@cd services/console && node --test --test-reporter=spec test/*.test.js
all: $(if $(shell command -v npm 2>/dev/null),console,console-skipped)
# `make install` puts the built console where the gateway looks by default
# (<bindir>/../share/tessera/console, docs/console-serving.md).
.PHONY: install-console
install-console: all
	if [ -f $(CONSOLE_DIR)/index.html ]; then install -d $(DESTDIR)$(PREFIX)/share/tessera/console && \
	  install -m 0644 $(CONSOLE_DIR)/index.html $(CONSOLE_DIR)/app.js $(CONSOLE_DIR)/app.css \
	    $(CONSOLE_DIR)/xterm.css $(CONSOLE_DIR)/app.js.LEGAL.txt $(DESTDIR)$(PREFIX)/share/tessera/console/; fi
install: install-console
# ---- end web console --------------------------------------------------------------
