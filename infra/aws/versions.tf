terraform {
  required_version = ">= 1.6, < 2.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.100.0"
    }
  }
}

provider "aws" {
  region = var.region
  default_tags {
    tags = { Project = "skewbench", Cluster = var.cluster_name }
  }
}
