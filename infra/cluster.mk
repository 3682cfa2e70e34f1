# Spark cluster targets. The top-level Makefile includes this file; it also runs alone:
#   make -f infra/cluster.mk cluster-up WORKERS=3
# CLOUD=local (default): 1 master + WORKERS workers on this machine, one network namespace each
#   (MEMORY per worker for executors, EXECUTOR_MEMORY = spark.executor.memory, BROKER=1: also a Redis broker node,
#   ENCRYPT=1: Spark's RPC and block transfers encrypted, SSH=1: every node reached and provisioned over SSH as a
#   VM is, from the inventory infra/aws/inventory.tftpl renders),
#   (CLUSTER_MODE=auto|netns|loopback, CLUSTER_NET=10.77.0, CLUSTER_PREFIX=sb, NETEM="delay 1ms loss 0.5%"; without the kernel's sch_netem, infra/local/linkem.py).
# CLOUD=aws: Terraform VMs in infra/aws (needs terraform, AWS credentials, infra/aws/terraform.tfvars).
WORKERS        ?= 2
CORES          ?= 2
MEMORY         ?= 1g
EXECUTOR_MEMORY ?= 512m
NETEM          ?=
BROKER         ?=
ENCRYPT        ?=
SSH            ?=
CLOUD          ?= local
CLUSTER_DIR    ?= .cluster
CLUSTER_NET    ?= 10.77.0
CLUSTER_PREFIX ?= sb
CLUSTER_MODE   ?= auto
CLUSTER_TIMEOUT ?= 180
INFRA_VENV     := .venv-infra
INFRA_STAMP    := $(INFRA_VENV)/.installed-$(shell cksum < infra/requirements.txt | cut -d' ' -f1)
LINT_VENV      := .venv-infra-lint
LINT_STAMP     := $(LINT_VENV)/.installed-$(shell cksum < infra/requirements-lint.txt | cut -d' ' -f1)
CLUSTER        := $(INFRA_VENV)/bin/python infra/local/cluster.py --dir $(CLUSTER_DIR)
PLAYBOOK       := ANSIBLE_CONFIG=ansible/ansible.cfg $(INFRA_VENV)/bin/ansible-playbook
TF             := terraform -chdir=infra/$(CLOUD)
CLOUD_INV      := infra/$(CLOUD)/inventory.yml

.PHONY: infra-setup infra-lint-setup cluster-up cluster-status cluster-down cluster-collect cluster-smoke cluster-test

infra-setup: $(INFRA_STAMP)  ## Ansible and psutil in their own venv: what brings up the cluster

infra-lint-setup: $(LINT_STAMP)  ## ansible-lint, checkov, python-hcl2 in their own venv: the static checks

# pip -qq: errors only (this machine's pip configuration may warn about every package it looks up).
$(INFRA_STAMP): infra/requirements.txt
	@echo "setup: Ansible and psutil into $(INFRA_VENV) (they bring up and watch the cluster), once"
	@python3 -m venv --clear $(INFRA_VENV)
	@$(INFRA_VENV)/bin/pip install -qq -r infra/requirements.txt
	@echo '*' > $(INFRA_VENV)/.gitignore
	@touch $@

$(LINT_STAMP): infra/requirements-lint.txt
	@echo "setup: ansible-lint, checkov and python-hcl2 into $(LINT_VENV) (the infrastructure's static checks), once"
	@python3 -m venv --clear $(LINT_VENV)
	@$(LINT_VENV)/bin/pip install -qq -r infra/requirements-lint.txt
	@echo '*' > $(LINT_VENV)/.gitignore
	@touch $@

ifeq ($(CLOUD),local)
cluster-up: infra-setup  ## start (or repair) the cluster; a no-op when it is healthy
	$(CLUSTER) up --workers $(WORKERS) --cores $(CORES) --memory $(MEMORY) --executor-memory $(EXECUTOR_MEMORY) --net $(CLUSTER_NET) --prefix $(CLUSTER_PREFIX) \
	    --mode $(CLUSTER_MODE) --timeout $(CLUSTER_TIMEOUT) $(if $(NETEM),--netem "$(NETEM)") $(if $(BROKER),--broker) $(if $(ENCRYPT),--encrypt) $(if $(SSH),--ssh)

cluster-status: infra-setup  ## master URL, workers with cores/memory/state, UI URLs
	$(CLUSTER) status

cluster-down: infra-setup  ## stop what cluster-up started, remove its namespaces
	$(CLUSTER) down

cluster-collect: infra-setup  ## logs and metrics of every node into results/cluster-<UTC time>
	$(PLAYBOOK) -i $(CLUSTER_DIR)/inventory.yml ansible/collect.yml
else
CLOUD_CHECK = @test -f infra/$(CLOUD)/versions.tf || { echo "CLOUD=$(CLOUD): no Terraform in infra/$(CLOUD) (CLOUD=local or aws)"; exit 2; }; \
	command -v terraform >/dev/null || { echo "terraform is not installed: https://developer.hashicorp.com/terraform/install"; exit 2; }

cluster-up: infra-setup
	$(CLOUD_CHECK)
	@test -f infra/$(CLOUD)/terraform.tfvars || { echo "copy infra/$(CLOUD)/terraform.tfvars.example to terraform.tfvars and fill it in"; exit 2; }
	$(TF) init -input=false
	$(TF) apply -input=false -auto-approve
	$(TF) output -raw inventory > $(CLOUD_INV)
	$(INFRA_VENV)/bin/pip wheel --quiet --no-deps -w infra/$(CLOUD)/dist .
	$(PLAYBOOK) -i $(CLOUD_INV) ansible/site.yml

cluster-status: infra-setup
	ANSIBLE_CONFIG=ansible/ansible.cfg $(INFRA_VENV)/bin/ansible masters -i $(CLOUD_INV) -m ansible.builtin.uri \
	    -a 'url=http://{{ node_ip }}:8080/json/ return_content=true'

cluster-down:
	$(CLOUD_CHECK)
	$(TF) destroy -input=false -auto-approve
	rm -f $(CLOUD_INV)

cluster-collect: infra-setup
	$(PLAYBOOK) -i $(CLOUD_INV) ansible/collect.yml
endif

cluster-smoke: infra-setup  ## a PySpark job from the load generator; prints which nodes ran its tasks
	SPARK_CONF_DIR=$(CLUSTER_DIR)/loadgen/conf .venv-cluster/bin/python infra/smoke_job.py

cluster-test: infra-setup infra-lint-setup  ## static infra checks + the local cluster's end-to-end tests (also part of make test)
	$(MAKE) --no-print-directory setup
	.venv/bin/python -m pytest -q tests/infra
