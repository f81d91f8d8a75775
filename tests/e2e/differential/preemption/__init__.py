"""The preemption differential test: gangsched's preemption of singletons against the real
kube-scheduler's DefaultPreemption.

`workload` makes a seeded cluster of filled nodes, budgets and preemptors; `runner` offers each
preemptor to gangsched (`verdict`, one planning round of the production core on the listed
objects) and to kube-scheduler (`oracle`, on the real control plane) and `compare`s them.
"""
