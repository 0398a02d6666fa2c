"""Gravitational N-body on vec3 positions, with the physics in a device class.

Run: python examples/nbody.py [--device opencl]   (checks against NumPy)

``Gravity`` holds the constant G (a class attribute: compiled in), the
softening length (an instance number: a run-time argument) and the masses
(an instance array). The kernel calls its ``acceleration`` method, which sums
the pull of every other body on one body in vec3 arithmetic; a kick-drift-kick
leapfrog then advances velocities and positions. The same steps are done in
NumPy and the two trajectories must agree to float32 accuracy.
"""

import argparse
import math

import numpy as np

import tack


@tack.device_class
class Gravity:
    G = 1.0                                    # compile-time constant

    def __init__(self, masses, softening):
        self.masses = masses                   # tack.Array: an extra kernel argument
        self.softening = softening             # number: a run-time scalar

    @tack.func
    def acceleration(self, pos, i):
        p = pos[i]
        acc = tack.vec3(0.0)
        eps2 = self.softening * self.softening
        for j in range(len(pos)):
            d = pos[j] - p
            r2 = tack.dot(d, d) + eps2
            acc += d * (self.G * self.masses[j] / (r2 * tack.f32(math.sqrt(r2))))
        return acc


@tack.kernel
def kick(gravity, pos, vel, dt):
    for i in range(len(pos)):
        vel[i] += gravity.acceleration(pos, i) * dt


@tack.kernel
def drift(pos, vel, dt):
    for i in range(len(pos)):
        pos[i] += vel[i] * dt


@tack.kernel
def kinetic_energy(vel, masses, out):
    for i in range(len(vel)):
        v = vel[i]
        out[i] = 0.5 * masses[i] * tack.dot(v, v)


def leapfrog(gravity, pos, vel, dt, steps):
    for _ in range(steps):
        kick(gravity, pos, vel, 0.5 * dt)
        drift(pos, vel, dt)
        kick(gravity, pos, vel, 0.5 * dt)


def numpy_leapfrog(m, x, v, dt, steps, eps):
    def accel(x):
        d = x[None, :, :] - x[:, None, :]                    # d[i, j] = x[j] - x[i]
        r2 = (d * d).sum(-1) + np.float32(eps * eps)
        w = m[None, :] / (r2 * np.sqrt(r2))
        return (d * w[:, :, None]).sum(1)
    for _ in range(steps):
        v = v + accel(x) * np.float32(0.5 * dt)
        x = x + v * np.float32(dt)
        v = v + accel(x) * np.float32(0.5 * dt)
    return x, v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bodies", type=int, default=257)
    ap.add_argument("--steps", type=int, default=20)
    ns = ap.parse_args()
    tack.set_default_device(ns.device)
    rng = np.random.default_rng(2026)
    x0 = rng.standard_normal((ns.bodies, 3)).astype(np.float32)
    v0 = (0.1 * rng.standard_normal((ns.bodies, 3))).astype(np.float32)
    m = rng.uniform(0.5, 1.5, ns.bodies).astype(np.float32) / ns.bodies
    dt, eps = 0.01, 0.05

    gravity = Gravity(tack.array(m), eps)
    pos = tack.array(x0, dtype=tack.vec3())
    vel = tack.array(v0, dtype=tack.vec3())
    leapfrog(gravity, pos, vel, dt, ns.steps)
    energy = tack.zeros(ns.bodies, tack.f32)
    kinetic_energy(vel, gravity.masses, energy)

    x_ref, v_ref = numpy_leapfrog(m, x0, v0, dt, ns.steps, eps)
    err_x = np.abs(pos.numpy() - x_ref).max()
    err_v = np.abs(vel.numpy() - v_ref).max()
    ke_ref = (0.5 * m * (v_ref * v_ref).sum(1)).sum()
    print(f"{ns.bodies} bodies, {ns.steps} leapfrog steps on {tack.get_default_device()}")
    print(f"max |x - numpy| = {err_x:.2e}, max |v - numpy| = {err_v:.2e}")
    print(f"kinetic energy {float(energy.numpy().sum()):.6f} (numpy {ke_ref:.6f})")
    assert err_x < 1e-4 and err_v < 1e-4, (err_x, err_v)
    print("nbody ok")


if __name__ == "__main__":
    main()
