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
	$(Q)$(AR) rcs $@ $^

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
# services/<name>/*.c -> $(BUILD)/bin/tessera-<name>; services/cli -> tessera.
# A service with migrations/*.sql gets them embedded (tools/embed-migrations.sh).
SERVICES := gateway auth registry scheduler agent vfolder wsproxy devbus
SERVICE_BINS := $(addprefix $(BUILD)/bin/tessera-,$(SERVICES))
CLI_BIN := $(BUILD)/bin/tessera

define service_rules
$(1)_SRC := $$(filter-out %_test.c,$$(wildcard services/$(1)/*.c))
$(1)_SQL := $$(sort $$(wildcard services/$(1)/migrations/*.sql))
$(1)_OBJ := $$(patsubst %.c,$$(BUILD)/obj/%.o,$$($(1)_SRC)) \
            $$(if $$($(1)_SQL),$$(BUILD)/obj/gen/services/$(1)/migrations.o)
$$(BUILD)/gen/services/$(1)/migrations.c: $$($(1)_SQL) tools/embed-migrations.sh
	@mkdir -p $$(dir $$@)
	$(Q)sh tools/embed-migrations.sh $(1) $$($(1)_SQL) > $$@
$(2): $$($(1)_OBJ) $$(COMMON_LIB)
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	$(Q)$$(CC) $$(LDFLAGS) -o $$@ $$($(1)_OBJ) $$(COMMON_LIB) $$(LDLIBS) $$($(1)_LIBS)
endef
$(foreach s,$(SERVICES),$(eval $(call service_rules,$(s),$(BUILD)/bin/tessera-$(s))))
$(eval $(call service_rules,cli,$(CLI_BIN)))

# ---- example configs, generated from each service's config table -------------
EXAMPLE_CONFS := $(patsubst %,$(BUILD)/etc/tessera/%.conf,$(SERVICES))
$(BUILD)/etc/tessera/%.conf: $(BUILD)/bin/tessera-%
	@mkdir -p $(dir $@)
	$(Q)$< --print-config-example > $@

# ---- unit tests (cmocka) ------------------------------------------------------
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(COMMON_LIB) $(LDLIBS) -lcmocka

.SECONDARY:
.PHONY: all deps test check unit integration asan install dev-up dev-down clean fmt fmt-check
all: $(COMMON_LIB) $(SERVICE_BINS) $(CLI_BIN) $(EXAMPLE_CONFS) $(UNIT_BINS)

deps:
	@sh tools/deps.sh

# `make test`: what a person types on a fresh machine.
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory check

check: unit integration

unit: $(UNIT_BINS)
	@sh tools/run-unit.sh $(UNIT_BINS)

integration: all
	@sh tools/run-integration.sh

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 unit

dev-up: deps
	@$(MAKE) --no-print-directory all
	@sh deploy/dev/dev-up.sh

dev-down:
	@sh deploy/dev/dev-down.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)/etc/tessera
	install -m 0755 $(SERVICE_BINS) $(CLI_BIN) $(DESTDIR)$(PREFIX)/bin/
	for u in deploy/systemd/*.service deploy/systemd/*.target; do \
	  sed 's|@BINDIR@|$(PREFIX)/bin|g' $$u > $(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); \
	  chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); done
	install -m 0644 $(EXAMPLE_CONFS) $(DESTDIR)/etc/tessera/

fmt:
	clang-format -i $$(git ls-files '*.c' '*.h')

fmt-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
