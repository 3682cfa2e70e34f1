"""A small PySpark job that proves the cluster works: tasks run on executors of every worker node.

Run it on the load generator with the driver configuration Ansible wrote (master URL, secret):

    SPARK_CONF_DIR=.cluster/loadgen/conf .venv-cluster/bin/python infra/smoke_job.py [--tasks 24]

It prints one JSON object: the application id, and per executor address the tasks Spark's REST API
says it completed; ``task_nodes`` are the addresses the tasks themselves saw (their route to the
master) and ``task_local_ips`` the node addresses Spark gave them, so both the scheduler's and the
tasks' view are checked; ``rpc_encrypted``: whether the job's RPC and block transfers were encrypted.
"""
import argparse
import json
import os
import socket
import urllib.request

from pyspark.sql import SparkSession


def node_address(master_host):
    """Where this task ran: the source address of its route to the master (no packet is sent) and the
    node address Spark was given (SPARK_LOCAL_IP, inherited from the worker). In network namespaces or
    on VMs both name the node; on loopback addresses the route always starts at 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((master_host, 7077))
        return s.getsockname()[0], os.environ.get("SPARK_LOCAL_IP", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24, help="number of tasks (partitions)")
    args = parser.parse_args()
    spark = SparkSession.builder.appName("skewbench-smoke").getOrCreate()
    sc = spark.sparkContext
    try:
        master_host = sc.master.removeprefix("spark://").rsplit(":", 1)[0]
        # Slow tasks a little so the scheduler spreads them over every executor.
        nodes = sc.parallelize(range(args.tasks), args.tasks).map(
            lambda _: (__import__("time").sleep(0.2), node_address(master_host))[1]).collect()
        url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/executors"
        with urllib.request.urlopen(url, timeout=10) as response:
            executors = json.load(response)
        done = {}
        for e in executors:
            if e["id"] != "driver":
                host = e["hostPort"].rsplit(":", 1)[0]
                done[host] = done.get(host, 0) + e["completedTasks"]
        print(json.dumps({"app": sc.applicationId, "executor_tasks": done,
                          "task_nodes": sorted({route for route, _ in nodes}),
                          "task_local_ips": sorted({local for _, local in nodes}),
                          "rpc_encrypted": sc.getConf().get("spark.network.crypto.enabled", "false") == "true"}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
