# The inventory's inputs are outputs too, so what Ansible gets is what `terraform output` shows.
locals {
  inventory = {
    masters         = { for name, role in local.nodes : name => aws_instance.node[name] if role == "master" }
    workers         = { for name, role in local.nodes : name => aws_instance.node[name] if role == "worker" }
    loadgens        = { for name, role in local.nodes : name => aws_instance.node[name] if role == "loadgen" }
    brokers         = { for name, role in local.nodes : name => aws_instance.node[name] if role == "broker" }
    ssh_user        = "admin" # Debian's cloud images
    worker_cores    = var.worker_cores
    worker_memory   = var.worker_memory
    executor_memory = var.executor_memory
    # What a VM site answers to ansible/group_vars/all.yml (a local cluster over SSH renders the same
    # template with its own: infra/local/cluster.py). Each becomes an all.vars line, JSON-encoded.
    site = {
      node_become              = true # the login user is not root: sudo
      cluster_dir              = "/opt/skewbench"
      common_python            = "/usr/bin/python3" # Debian's: it makes the skewbench venv
      skewbench_venv           = "/opt/skewbench/venv"
      skewbench_source         = "/opt/skewbench/skewbench-{{ skewbench_version }}-py3-none-any.whl"
      skewbench_editable       = false
      skewbench_wheel          = "{{ inventory_dir }}/dist/skewbench-{{ skewbench_version }}-py3-none-any.whl"
      spark_user               = "spark"
      service_manager          = "systemd"
      metrics_scope            = "netns" # a node is what runs in its network namespace: the whole VM
      spark_daemon_memory      = "1g"
      spark_network_encryption = true # node-to-node traffic crosses the cloud's network
    }
  }
}

output "masters" {
  description = "Master node: name => public and private address."
  value       = { for name, vm in local.inventory.masters : name => { public = vm.public_ip, private = vm.private_ip } }
}

output "workers" {
  description = "Worker nodes: name => public and private address."
  value       = { for name, vm in local.inventory.workers : name => { public = vm.public_ip, private = vm.private_ip } }
}

output "loadgens" {
  description = "Load generator node: name => public and private address."
  value       = { for name, vm in local.inventory.loadgens : name => { public = vm.public_ip, private = vm.private_ip } }
}

output "brokers" {
  description = "Broker node (none unless instance_counts.broker = 1): name => public and private address."
  value       = { for name, vm in local.inventory.brokers : name => { public = vm.public_ip, private = vm.private_ip } }
}

output "ssh_user" {
  description = "Login user of every node."
  value       = local.inventory.ssh_user
}

output "worker_cores" {
  description = "Spark task slots per worker."
  value       = local.inventory.worker_cores
}

output "worker_memory" {
  description = "Executor memory per worker."
  value       = local.inventory.worker_memory
}

output "executor_memory" {
  description = "spark.executor.memory of applications."
  value       = local.inventory.executor_memory
}

output "site" {
  description = "Site settings of the inventory (ansible/group_vars/all.yml says which)."
  value       = local.inventory.site
}

output "inventory" {
  description = "Ansible inventory (YAML): terraform output -raw inventory > inventory.yml"
  value = templatefile("${path.module}/inventory.tftpl", {
    masters         = local.inventory.masters
    workers         = local.inventory.workers
    loadgens        = local.inventory.loadgens
    brokers         = local.inventory.brokers
    ssh_user        = local.inventory.ssh_user
    worker_cores    = local.inventory.worker_cores
    worker_memory   = local.inventory.worker_memory
    executor_memory = local.inventory.executor_memory
    site            = local.inventory.site
  })
}
