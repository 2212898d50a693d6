"""Benchmark (HV(G*)) of alternative readings of the d >= 3 instance text, against the paper's THV-UCB values.

    PYTHONPATH=. python experiments/topk_pareto/alt_readings.py

"first"/"second": which DTLZ angle the clusters restriction applies to; "angles": i.i.d. U[0, pi/2] angles
(our reading); "sphere": area-uniform points on the positive sphere (Dirichlet(1) on the simplex for linear).
60 instances per row, mean HV(G*).
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

from mobandit_jax.metrics.slate import greedy_value
from mobandit_jax.problems import dtlz

S={3:(60,4),4:(100,5),5:(150,6)}
paper={3:dict(clusters=0.2955,concave=0.2894,convex=0.5895,linear=0.1592),4:dict(clusters=0.0854,concave=0.1051,convex=0.3709,linear=0.0677),5:dict(clusters=0.0266,concave=0.0202,convex=0.1841,linear=0.0095)}
def draw(key,n,d,front,variant):
    nf=dtlz.n_front_arms(n)
    k1,k2,k3=jax.random.split(key,3)
    if variant=="sphere":   # area-uniform on the positive sphere / simplex
        z=jnp.abs(jax.random.normal(k1,(nf,d)))
        if front=="linear":
            e=jax.random.exponential(k1,(nf,d))
            f=e/e.sum(1,keepdims=True)*dtlz.linear_scale(d)
            f=jnp.clip(f,0.01,1)
        else:
            p=z/jnp.linalg.norm(z,axis=1,keepdims=True)
            f=p if front!="convex" else jnp.sqrt(p)
    else:
        theta=jax.random.uniform(k1,(nf,d-1),maxval=math.pi/2)
        if front=="clusters":
            j = 0 if variant=="first" else 1
            u=jax.random.uniform(k2,(nf,))*2*math.pi/5
            th=u+jnp.where(u>=math.pi/5,math.pi/10,0.)
            theta=theta.at[:,j].set(th)
        a={"concave":1.,"clusters":1.,"convex":.5,"linear":2.}[front]
        f=dtlz.dtlz_front_points(theta,a)
        if front=="linear":
            f=jnp.clip(f*dtlz.linear_scale(d),0.01,1)
    dom=jax.random.uniform(k3,(n-nf,d),maxval=0.3)
    return jnp.concatenate([f,dom])
for d,(n,k) in S.items():
    for front,variant in [("clusters","first"),("clusters","second"),("linear","angles"),("linear","sphere"),
                          ("concave","angles"),("concave","sphere"),("convex","angles"),("convex","sphere")]:
        f=jax.jit(jax.vmap(lambda key: greedy_value(draw(key,n,d,front,variant),k,jnp.zeros(d))))
        v=np.asarray(f(jax.random.split(jax.random.PRNGKey(5),60)))
        print(d,front,variant,round(v.mean(),4),"vs paper THV",paper[d][front],
              "%+.1f%%"%(100*(v.mean()/paper[d][front]-1)))
