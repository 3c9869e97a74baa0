# Ballast: two commands on a fresh machine -- `make demo` and `make test`.
# Everything installs into .venv in the repo root; nothing is installed by hand.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Apache Kafka's jars for the real local cluster, copied from Maven Central as jvm/kafka-runtime/pom.xml pins them.
KAFKA_LIB   := .kafka/lib
KAFKA_STAMP := $(KAFKA_LIB)/.installed
# An archive of Kafka's classes that the local cluster's JVMs map as they start: a node starts in about half the time
# and CPU (services/local/kafka_classes.py).
KAFKA_CLASSES := .kafka/kafka-classes.jsa
# Ballast's nearest-replica selector, a broker plugin the local cluster loads (jvm/replica-selector, JUnit-tested
# by the build).
SELECTOR_JAR := .kafka/plugins/ballast-replica-selector.jar
SELECTOR_SRC := jvm/replica-selector/pom.xml $(shell find jvm/replica-selector/src -name '*.java' 2>/dev/null)
# Kafka's own StripedReplicaPlacer as a filter, for the test that compares Ballast's striped placer with it.
HARNESS_JAR := .kafka/harness/ballast-placer-harness.jar
HARNESS_SRC := jvm/placer-harness/pom.xml $(shell find jvm/placer-harness/src -name '*.java' 2>/dev/null)
# Spark's JVM Kafka source (spark-sql-kafka at PySpark's version) and the jars it needs that PySpark lacks.
SPARK_JARS        := .spark/jars
SPARK_JARS_STAMP  := $(SPARK_JARS)/.installed
SPARK_KAFKA_ONLY  := spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2
# Debian's Chromium, for the dashboard's browser test (Playwright drives it; it downloads no browser of its own).
CHROMIUM := /usr/bin/chromium
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# `make test` makes what it needs side by side (TEST_DEPS): Maven's runs take turns on the local repository (two may
# write one artifact at once) and apt's on the package database, which refuses a second apt at once.
MVN      := mkdir -p $(HOME)/.m2 && flock $(HOME)/.m2/.ballast.lock mvn
APT_GET  := $(SUDO) env DEBIAN_FRONTEND=noninteractive flock /var/lib/apt/.ballast.lock apt-get
# The container images (deploy/Dockerfile, deploy/kafka, deploy/prometheus), built with podman from Debian's packages FROM a Debian base
# made here with debootstrap: no registry is needed. podman reads the project's containers.conf (CONTAINERS_CONF);
# /etc is left alone.
VERSION      := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
# Kafka for the compose stack, from the same jars as the local real cluster (jvm/kafka-runtime/pom.xml's version).
KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/kafka-runtime/pom.xml)
KAFKA_IMAGE  := ballast-kafka:$(KAFKA_VERSION)
DEBIAN_SUITE := bookworm
BASE_IMAGE   := localhost/ballast-base:$(DEBIAN_SUITE)-3
CONTAINERS   := CONTAINERS_CONF=$(CURDIR)/deploy/podman/containers.conf
PODMAN       := env $(CONTAINERS) podman
PODMAN_DEBS  := podman=4.3.1+ds1-8+deb12u1+b3 runc=1.1.5+ds1-1+deb12u1 netavark=1.4.0-3 aardvark-dns=1.4.0-3 \
                iptables=1.8.9-2 debootstrap=1.0.128+nmu2+deb12u2
# The compose stack's project (its containers', volumes' and network's prefix): another name runs a second stack
# beside the first (with other ports: deploy/compose.yaml's variables), as the compose test does.
BALLAST_COMPOSE_PROJECT ?= ballast
# How long `make compose-up` waits for the stack to answer (`ballast doctor --wait`).
BALLAST_COMPOSE_WAIT_S  ?= 600
# The stack's CA, certificate and passwords (services/local/compose_secrets.py), made by compose-up, mounted into the
# containers from here, and removed by compose-down.
BALLAST_COMPOSE_SECRETS ?= $(CURDIR)/.ballast/compose/$(BALLAST_COMPOSE_PROJECT)
COMPOSE      := $(CONTAINERS) BALLAST_COMPOSE_SECRETS=$(BALLAST_COMPOSE_SECRETS) $(BIN)/podman-compose \
                -p $(BALLAST_COMPOSE_PROJECT) -f deploy/compose.yaml
# The `ballast` CLI's settings for the compose stack, with the ports the stack's variables give (the shell expands
# them); the policy the stack's topic reconciler holds specs to, so that `ballast diff` and `apply` refuse first; the
# user ballast's password file and the stack's CA, for the bus and the cluster alike.
COMPOSE_KAFKA_SECURITY = SECURITY_PROTOCOL=SASL_SSL SASL_MECHANISM=SCRAM-SHA-512 SASL_USERNAME=ballast \
  SASL_PASSWORD_FILE=$(BALLAST_COMPOSE_SECRETS)/clients/ballast.password SSL_CAFILE=$(BALLAST_COMPOSE_SECRETS)/clients/ca.crt
COMPOSE_CLI_ENV = BALLAST_BUS__BOOTSTRAP_SERVERS=127.0.0.1:$${BALLAST_COMPOSE_KAFKA_PORT_1:-19092} \
  $(addprefix BALLAST_BUS__,$(COMPOSE_KAFKA_SECURITY)) \
  BALLAST_CLUSTER_ADMIN__KIND=kafka \
  BALLAST_CLUSTER_ADMIN__BOOTSTRAP_SERVERS=127.0.0.1:$${BALLAST_COMPOSE_KAFKA_PORT_1:-19092} \
  $(addprefix BALLAST_CLUSTER_ADMIN__,$(COMPOSE_KAFKA_SECURITY)) \
  BALLAST_CRUISE_CONTROL__HOST=127.0.0.1 \
  BALLAST_CRUISE_CONTROL__PORT=$${BALLAST_COMPOSE_CRUISE_CONTROL_PORT:-9090} \
  BALLAST_PORTS__TOPIC_RECONCILER=$${BALLAST_COMPOSE_PORT_TOPIC_RECONCILER:-6066} \
  BALLAST_PORTS__REPLICAS_CHANGE=$${BALLAST_COMPOSE_PORT_REPLICAS_CHANGE:-6067} \
  BALLAST_PORTS__REBALANCER=$${BALLAST_COMPOSE_PORT_REBALANCER:-6068} \
  BALLAST_PORTS__LOAD_COLLECTOR=$${BALLAST_COMPOSE_PORT_LOAD_COLLECTOR:-6069} \
  BALLAST_PORTS__THROTTLE=$${BALLAST_COMPOSE_PORT_THROTTLE:-6070} \
  BALLAST_POLICY_FILE=$(CURDIR)/deploy/policy/policy.yaml
# HTTPS from inside a build passes whatever the host's passes: pip there trusts the host's CA bundle.
HOST_CA      := /etc/ssl/certs/ca-certificates.crt
# What a build removes. A rebuild of a tag leaves the image it replaced untagged; each image target then removes the
# untagged images of this checkout's builds, and no others:
# - Every image built here carries io.ballast.checkout=CHECKOUT_ID (a hash of this checkout's path; the
#   Containerfiles' BALLAST_CHECKOUT), and the prune names it. The prune by io.ballast.image, a label every checkout's
#   images carry, removed another checkout's images too, while its build used them: a fresh clone's `make test` failed
#   with "image not known" beside another checkout's build.
# - Under a lock on podman's image store (IMAGE_LOCK): the layer cache is the machine's, so an image this checkout
#   made can be the cache another checkout's build stands on at that moment. Builds hold the lock shared and run side
#   by side; a prune holds it alone, between builds.
# Images a container uses stay (podman prunes none of them). A prune that waits ten minutes for other checkouts'
# builds is skipped (the next build's prune removes what it would have). Not pruning at all would be as safe, but
# every change of the source would leave the images it replaced behind.
CHECKOUT_ID  := $(shell printf '%s' '$(CURDIR)' | sha256sum | cut -c1-16)
IMAGE_LOCK    = $(shell $(PODMAN) info --format '{{.Store.GraphRoot}}')/ballast-images.lock
BUILD_IMAGE   = flock --shared $(IMAGE_LOCK) $(PODMAN) build --quiet --build-arg BALLAST_CHECKOUT=$(CHECKOUT_ID) \
                  --build-arg BASE=$(BASE_IMAGE)
PRUNE_IMAGES  = flock --exclusive --wait 600 $(IMAGE_LOCK) $(PODMAN) image prune --force \
                  --filter label=io.ballast.checkout=$(CHECKOUT_ID) > /dev/null

.PHONY: podman-debs image image-base image-kafka image-prometheus images compose-up compose-down compose-env install bytecode kafka selector placer-harness spark-kafka demo demo-kafka up up-kafka down status dashboard test test-fast test-system test-unit bench schema clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet pip==26.3
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[local,spark,test]'
	@touch $(STAMP)

# Ballast's own modules compiled ahead (an editable install leaves them as source). Where PYTHONDONTWRITEBYTECODE is
# set, as on this machine, every process compiled what it imported again: 0.4 s of CPU for each service start and CLI
# call, of which the suite makes some two hundred. A module changed since is compiled again here (or, if it changes
# later, in memory by the process that imports it, as before).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q services events spark bench > /dev/null

$(KAFKA_STAMP): jvm/kafka-runtime/pom.xml
	@rm -rf $(KAFKA_LIB)
	$(MVN) -q -B -Dstyle.color=never -f jvm/kafka-runtime/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(KAFKA_LIB)
	@touch $(KAFKA_STAMP)

$(KAFKA_CLASSES): $(KAFKA_STAMP) $(STAMP) services/local/kafka_classes.py
	$(BIN)/python -m services.local.kafka_classes

$(SELECTOR_JAR): $(SELECTOR_SRC)
	$(MVN) -q -B -Dstyle.color=never -f jvm/replica-selector/pom.xml package
	@mkdir -p $(dir $(SELECTOR_JAR))
	cp jvm/replica-selector/target/ballast-replica-selector-0.1.0.jar $(SELECTOR_JAR)

$(HARNESS_JAR): $(HARNESS_SRC)
	$(MVN) -q -B -Dstyle.color=never -f jvm/placer-harness/pom.xml package
	@mkdir -p $(dir $(HARNESS_JAR))
	cp jvm/placer-harness/target/ballast-placer-harness-0.1.0.jar $(HARNESS_JAR)

$(SPARK_JARS_STAMP): jvm/spark-kafka/pom.xml
	@rm -rf $(SPARK_JARS)
	$(MVN) -q -B -Dstyle.color=never -f jvm/spark-kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DincludeArtifactIds=$(SPARK_KAFKA_ONLY) -DoutputDirectory=$(CURDIR)/$(SPARK_JARS)
	@touch $(SPARK_JARS_STAMP)

$(CHROMIUM):
	$(APT_GET) update -qq
	$(APT_GET) install -y -qq --no-install-recommends chromium

install: $(STAMP) $(KAFKA_STAMP) $(KAFKA_CLASSES) $(SELECTOR_JAR) $(SPARK_JARS_STAMP)

kafka: $(KAFKA_STAMP) $(KAFKA_CLASSES) $(SELECTOR_JAR)

selector: $(SELECTOR_JAR)

placer-harness: $(HARNESS_JAR)

spark-kafka: $(SPARK_JARS_STAMP)

demo: $(STAMP) bytecode
	$(BIN)/ballast demo

demo-kafka: $(STAMP) bytecode $(KAFKA_STAMP) $(KAFKA_CLASSES) $(SELECTOR_JAR)
	$(BIN)/ballast demo --kafka

up: $(STAMP) bytecode
	$(BIN)/ballast up

up-kafka: $(STAMP) bytecode $(KAFKA_STAMP) $(KAFKA_CLASSES) $(SELECTOR_JAR)
	$(BIN)/ballast up --kafka

down: $(STAMP)
	$(BIN)/ballast down

status: $(STAMP)
	$(BIN)/ballast status

dashboard: $(STAMP)
	$(BIN)/ballast dashboard

# The suite in four processes (pytest-xdist, tests/scheduling.py): the shared Kafka cluster's tests in one, the
# shared integration stack's in one, the in-process Spark tests in one, every other module whole in any; the fourth
# starts with the unit tests (pure CPU), and so starts stacks only after the run's busiest minutes. With four that all
# started stacks at once, a fresh clone's run took longer (806 s against 758 s with three, 2026-11-27) and five tests
# ran past their deadlines; with three, the cores were half idle in the last hundred seconds. TEST_WORKERS= (empty)
# runs it in one.
TEST_WORKERS ?= 4
PYTEST := $(BIN)/pytest -q $(if $(TEST_WORKERS),-n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder)

# The suite's two tiers (tests/tiers.py decides which test is in which; docs/testing.md). The fast tier needs only
# the Python packages; the system tier needs everything TEST_DEPS makes.
FAST_DEPS := $(STAMP) bytecode

# What the suite needs, made side by side: pip's install takes a minute of one core, Maven's steps half a minute
# more (measured on a fresh clone: 51 s, and 28 s after it when made one after the other), and the compose test's
# images are made while a core idles; the test then does not ask for them again (TEST_IMAGES_BUILT).
TEST_DEPS := $(FAST_DEPS) $(KAFKA_STAMP) $(KAFKA_CLASSES) $(SELECTOR_JAR) $(HARNESS_JAR) $(SPARK_JARS_STAMP) \
             $(CHROMIUM) podman-debs images

# Both tiers in one run: the system tier's long groups go first (tests/scheduling.py) and the fast tier's modules fill
# the cores while they wait on their clusters; one tier after the other would leave cores idle at the end of each.
test:
	@$(MAKE) --no-print-directory --jobs=4 --output-sync=target $(TEST_DEPS)
	TEST_IMAGES_BUILT=1 $(PYTEST)

test-fast:
	@$(MAKE) --no-print-directory $(FAST_DEPS)
	$(PYTEST) -m fast

test-system:
	@$(MAKE) --no-print-directory --jobs=4 --output-sync=target $(TEST_DEPS)
	TEST_IMAGES_BUILT=1 $(PYTEST) -m system

# The unit tests alone, in one process: no stack, no cluster.
test-unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

bench: $(STAMP) bytecode $(KAFKA_STAMP) $(KAFKA_CLASSES) $(SELECTOR_JAR) $(SPARK_JARS_STAMP)
	$(BIN)/python -m bench.placement --write BENCHMARKS.md
	$(BIN)/python -m bench.disk_balance --write BENCHMARKS.md
	$(BIN)/python -m bench.replicas_change --relaxed --write BENCHMARKS.md
	$(BIN)/python -m bench.rf_movements --write BENCHMARKS.md
	$(BIN)/python -m bench.rebalance --write BENCHMARKS.md
	$(BIN)/python -m bench.spark_aggregates --write BENCHMARKS.md
	$(BIN)/python -m bench.kafka_cluster --write BENCHMARKS.md
	$(BIN)/python -m bench.follower_fetching --write BENCHMARKS.md
	$(BIN)/python -m bench.replicas_change --kafka --write BENCHMARKS.md
	$(BIN)/python -m bench.rebalance --kafka --write BENCHMARKS.md
	$(BIN)/python -m bench.spark_aggregates --sources --write BENCHMARKS.md
	$(BIN)/python -m bench.cordons --write BENCHMARKS.md
	$(BIN)/python -m bench.shards --write BENCHMARKS.md

schema: $(STAMP)
	$(BIN)/ballast schema --out docs/schemas

# Installed when any of the pinned packages is missing or at another version (a machine that had podman before
# aardvark-dns, the containers' name server, was added gets it too).
podman-debs:
	@[ "$$(dpkg-query -W -f '$${Package}=$${Version}\n' $(foreach d,$(PODMAN_DEBS),$(firstword $(subst =, ,$(d)))) \
	      2>/dev/null | sort)" = "$$(printf '%s\n' $(PODMAN_DEBS) | sort)" ] || \
	  { $(APT_GET) update -qq && $(APT_GET) install -y -qq --no-install-recommends $(PODMAN_DEBS); }

# A minimal Debian (debootstrap's minbase) with the suite's updates and security fixes, imported as an image once per
# machine (remove it to make it again with newer fixes). BASE_IMAGE's suffix is this recipe's revision: a change here
# raises it, so that every machine makes the base again.
image-base: podman-debs
	@$(PODMAN) image exists $(BASE_IMAGE) || { \
	  rootfs=$$(mktemp -d) && trap '$(SUDO) rm -rf '$$rootfs' '$$rootfs.log EXIT && \
	  echo "debootstrap $(DEBIAN_SUITE) (a minute or more)" && \
	  $(SUDO) debootstrap --variant=minbase $(DEBIAN_SUITE) $$rootfs http://deb.debian.org/debian > /dev/null && \
	  printf 'deb http://deb.debian.org/debian %s main\n' $(DEBIAN_SUITE) $(DEBIAN_SUITE)-updates \
	    | $(SUDO) tee $$rootfs/etc/apt/sources.list > /dev/null && \
	  printf 'deb http://deb.debian.org/debian-security %s-security main\n' $(DEBIAN_SUITE) \
	    | $(SUDO) tee -a $$rootfs/etc/apt/sources.list > /dev/null && \
	  { $(SUDO) chroot $$rootfs sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -qq' \
	    > $$rootfs.log 2>&1 || { cat $$rootfs.log >&2; false; }; } && \
	  $(SUDO) rm -rf $$rootfs/var/cache/apt/archives/*.deb $$rootfs/var/cache/apt/*.bin $$rootfs/var/lib/apt/lists/* && \
	  $(SUDO) tar -C $$rootfs -c . | $(PODMAN) import --quiet - $(BASE_IMAGE) > /dev/null; }

# Two targets of one Dockerfile: ballast (every service but the Spark job, no Java) and ballast-spark (with Spark);
# the second build reuses the first's layers.
image: image-base
	@for target in ballast ballast-spark; do \
	  $(BUILD_IMAGE) -f deploy/Dockerfile --target $$target -t $$target:$(VERSION) \
	    $(if $(wildcard $(HOST_CA)),--volume $(HOST_CA):/run/host-ca.crt:ro --build-arg PIP_CERT=/run/host-ca.crt) . \
	    > /dev/null || exit 1; \
	done
	@$(PRUNE_IMAGES) || true
	@$(PODMAN) image ls --filter reference=ballast:$(VERSION) --filter reference=ballast-spark:$(VERSION) \
	  --format '{{.Repository}}:{{.Tag}} {{.Size}}'

# The build context is made here: deploy/kafka and the jars (Kafka's, and Ballast's replica selector plugin).
image-kafka: image-base $(KAFKA_STAMP) $(SELECTOR_JAR)
	@context=$$(mktemp -d) && trap 'rm -rf '$$context EXIT && mkdir $$context/libs && \
	  cp deploy/kafka/Containerfile deploy/kafka/kafka-node deploy/kafka/log4j2.properties $$context/ && \
	  cp $(KAFKA_LIB)/*.jar $(SELECTOR_JAR) $$context/libs/ && \
	  $(BUILD_IMAGE) -f $$context/Containerfile -t $(KAFKA_IMAGE) $$context > /dev/null
	@$(PRUNE_IMAGES) || true
	@$(PODMAN) image ls $(KAFKA_IMAGE) --format '{{.Repository}}:{{.Tag}} {{.Size}}'

PROMETHEUS_IMAGE := ballast-prometheus:$(VERSION)
image-prometheus: image-base
	@$(BUILD_IMAGE) -f deploy/prometheus/Containerfile -t $(PROMETHEUS_IMAGE) deploy/prometheus > /dev/null
	@$(PRUNE_IMAGES) || true
	@$(PODMAN) image ls $(PROMETHEUS_IMAGE) --format '{{.Repository}}:{{.Tag}} {{.Size}}'

# One after the other (whatever -j the caller gives): each prune waits for every build under way (IMAGE_LOCK), so
# side by side they would mostly wait for each other.
images:
	@$(MAKE) --no-print-directory --jobs=1 image image-kafka image-prometheus

# The compose stack (deploy/compose.yaml): Kafka in containers, the simulated Cruise Control and every service.
# `up -d` returns once the containers are started, not when they answer: this waits until `ballast doctor` passes
# (the bus and Ballast's topics, the brokers, Cruise Control past its warm-up, each service's /health), and says what
# it still waits for meanwhile.
compose-up: $(STAMP) images
	$(BIN)/python -m services.local.compose_secrets $(BALLAST_COMPOSE_SECRETS)
	$(COMPOSE) up -d
	@echo "waiting for the stack to answer (ballast doctor, up to $(BALLAST_COMPOSE_WAIT_S) s: BALLAST_COMPOSE_WAIT_S)"
	@env $(COMPOSE_CLI_ENV) $(BIN)/ballast doctor --wait $(BALLAST_COMPOSE_WAIT_S) || { \
	  echo "the compose stack did not answer within $(BALLAST_COMPOSE_WAIT_S) s: the table above says which part;" \
	    "its log: podman logs $(BALLAST_COMPOSE_PROJECT)_<service>_1" >&2; exit 1; }
	@echo "dashboard: http://127.0.0.1:$${BALLAST_COMPOSE_DASHBOARD_PORT:-8642}; the CLI on this stack: eval \"\$$(make -s compose-env)\""

compose-down: $(STAMP)
	$(COMPOSE) down --volumes
	rm -rf $(BALLAST_COMPOSE_SECRETS)

# The `ballast` CLI's settings for the compose stack, as shell exports: eval "$$(make -s compose-env)".
compose-env:
	@for setting in $(COMPOSE_CLI_ENV); do echo "export $$setting"; done

clean:
	rm -rf $(VENV) .ballast .pytest_cache .kafka .spark jvm/replica-selector/target jvm/placer-harness/target
