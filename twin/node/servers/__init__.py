"""The endpoint-0 cluster servers every node has, one file per cluster, like clusters/.

Their state lives in the node's commissioning state (twin/node/commissioning.py), which
creates them; they are node-only and never in snapshots."""
