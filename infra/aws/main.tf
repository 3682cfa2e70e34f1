# Commodity VMs for a Spark standalone cluster: one master, N workers, one load generator and, when
# asked for, a broker, in one private network. SSH is open to the operator's CIDR only; Spark and everything else flows only
# inside the cluster's security group. Ansible provisions the nodes from the `inventory` output.

data "aws_ami" "debian" {
  most_recent = true
  owners      = ["136693071363"] # Debian's official account
  filter {
    name   = "name"
    values = ["debian-12-amd64-*"]
  }
}

locals {
  roles = {
    for role, count in var.instance_counts : role => [for i in range(count) : count == 1 ? role : "${role}${i + 1}"]
  }
  nodes = merge([for role, names in local.roles : { for name in names : name => role }]...)
}

resource "aws_vpc" "cluster" {
  cidr_block           = var.vpc_cidr
  enable_dns_hostnames = true
  #checkov:skip=CKV2_AWS_11:Flow logs cost more than the short-lived benchmark cluster; collect.yml gathers node logs.
  tags = { Name = var.cluster_name }
}

# No rules: nothing may use the VPC's default security group.
resource "aws_default_security_group" "closed" {
  vpc_id = aws_vpc.cluster.id
}

resource "aws_internet_gateway" "cluster" {
  vpc_id = aws_vpc.cluster.id
}

resource "aws_subnet" "cluster" {
  vpc_id            = aws_vpc.cluster.id
  cidr_block        = var.vpc_cidr
  availability_zone = "${var.region}${var.zone_letter}"
  tags              = { Name = var.cluster_name }
}

resource "aws_route_table" "cluster" {
  vpc_id = aws_vpc.cluster.id
  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.cluster.id
  }
}

resource "aws_route_table_association" "cluster" {
  subnet_id      = aws_subnet.cluster.id
  route_table_id = aws_route_table.cluster.id
}

resource "aws_security_group" "cluster" {
  name        = "${var.cluster_name}-nodes"
  description = "skewbench nodes: SSH from the operator, Spark only inside the cluster"
  vpc_id      = aws_vpc.cluster.id

  ingress {
    description = "SSH from the operator only"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = [var.allowed_ssh_cidr]
  }
  ingress {
    description = "Spark RPC, block transfer, UIs and the broker between cluster nodes"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    self        = true
  }
  egress {
    description = "Everything between cluster nodes"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    self        = true
  }
  egress {
    description = "HTTPS for Debian packages and PyPI"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
  egress {
    description = "HTTP for Debian package mirrors"
    from_port   = 80
    to_port     = 80
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

resource "aws_key_pair" "operator" {
  key_name   = "${var.cluster_name}-operator"
  public_key = var.ssh_public_key
}

resource "aws_instance" "node" {
  for_each = local.nodes
  #checkov:skip=CKV_AWS_88:Nodes need a public address for the operator's SSH, which the security group limits to allowed_ssh_cidr.
  #checkov:skip=CKV2_AWS_41:Nodes call no AWS API, so they get no IAM role.

  ami                         = data.aws_ami.debian.id
  instance_type               = var.instance_types[each.value]
  subnet_id                   = aws_subnet.cluster.id
  vpc_security_group_ids      = [aws_security_group.cluster.id]
  key_name                    = aws_key_pair.operator.key_name
  associate_public_ip_address = true
  ebs_optimized               = true
  monitoring                  = true

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }
  root_block_device {
    volume_size = var.root_volume_gb
    volume_type = "gp3"
    encrypted   = true
  }
  tags = { Name = "${var.cluster_name}-${each.key}", Role = each.value }
}
