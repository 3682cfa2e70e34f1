variable "cluster_name" {
  description = "Name prefix of every resource and tag; lets several clusters share an account."
  type        = string
  default     = "skewbench"
}

variable "region" {
  description = "AWS region to run in."
  type        = string
  default     = "eu-west-1"
}

variable "zone_letter" {
  description = "Availability zone within the region (a, b, c...): all nodes share one zone, so traffic between them is free."
  type        = string
  default     = "a"
}

variable "allowed_ssh_cidr" {
  description = "The operator's address range (e.g. 203.0.113.7/32): the only source allowed to reach SSH. No default on purpose."
  type        = string
  validation {
    condition     = can(cidrhost(var.allowed_ssh_cidr, 0)) && var.allowed_ssh_cidr != "0.0.0.0/0"
    error_message = "allowed_ssh_cidr must be a CIDR block narrower than 0.0.0.0/0, e.g. your.ip.address/32."
  }
}

variable "ssh_public_key" {
  description = "OpenSSH public key installed for the login user on every node (contents, not a path)."
  type        = string
}

variable "vpc_cidr" {
  description = "Private network of the cluster; every node gets an address in it and Spark binds only to it."
  type        = string
  default     = "10.60.0.0/24"
}

variable "instance_types" {
  description = "EC2 instance type per role (master, worker, loadgen, broker)."
  type        = map(string)
  default     = { master = "m6i.large", worker = "c6i.xlarge", loadgen = "c6i.large", broker = "m6i.large" }
  validation {
    condition     = alltrue([for role in ["master", "worker", "loadgen", "broker"] : contains(keys(var.instance_types), role)])
    error_message = "instance_types needs the keys master, worker, loadgen and broker."
  }
}

variable "instance_counts" {
  description = "Number of nodes per role; master and loadgen must be 1, broker 0 or 1 (a Redis broker between the load generator and Spark)."
  type        = map(number)
  default     = { master = 1, worker = 4, loadgen = 1, broker = 0 }
  validation {
    condition     = var.instance_counts["master"] == 1 && var.instance_counts["loadgen"] == 1 && var.instance_counts["worker"] >= 1 && contains([0, 1], lookup(var.instance_counts, "broker", 0))
    error_message = "instance_counts must be { master = 1, worker = N >= 1, loadgen = 1, broker = 0 or 1 }."
  }
}

variable "root_volume_gb" {
  description = "Encrypted root disk size of every node, in GiB."
  type        = number
  default     = 30
}

variable "worker_cores" {
  description = "Spark task slots per worker (SPARK_WORKER_CORES); may exceed the vCPUs when tasks sleep."
  type        = number
  default     = 4
}

variable "worker_memory" {
  description = "Memory per worker that Spark may give to executors (SPARK_WORKER_MEMORY)."
  type        = string
  default     = "6g"
}

variable "executor_memory" {
  description = "spark.executor.memory of applications."
  type        = string
  default     = "2g"
}
