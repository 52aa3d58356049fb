// Prints the Matter data model as matter.js (@matter/model) holds it, as JSON: every cluster's
// features, attributes, commands and events with their conformance, and every device type's
// requirements. tests/conformance/spec_model.py reads it; run with node_modules beside this file.
import { Matter } from "@matter/model";

const text = value => (value === undefined || value === null) ? "" : String(value);
// The fields of a struct attribute (of its entries, for a list), with type and constraint.
const fieldsOf = model => {
    const holder = model.listEntry ?? model;
    return holder.effectiveMetatype === "object" ? [...holder.members].map(field => ({
        name: field.name, type: field.primitiveBase?.name ?? "", constraint: text(field.effectiveConstraint) })) : [];
};
// A derived cluster (DishwasherMode on ModeBase, ...) lists only what it overrides: its base's
// elements first, then the derived ones by name, an empty override keeping the base's conformance.
const children = cluster => {
    const merged = new Map();
    for (const child of [...(cluster.base ? children(cluster.base) : []), ...cluster.children]) {
        const before = merged.get(`${child.tag}:${child.name}`);
        const entry = { tag: child.tag, id: child.id ?? before?.id, name: child.name,
                        conformance: text(child.conformance) || (before?.conformance ?? ""),
                        direction: child.direction ?? before?.direction ?? "",
                        children: child.children?.length ? child.children : (before?.children ?? []),
                        constraint: text(child.constraint),
                        // attributes: the spec data type beneath it (uint8 for an enum8, string,
                        // list, ...) and its constraint as inherited (a derived NodeLabel's "max 32")
                        type: child.primitiveBase?.name ?? before?.type ?? "",
                        limit: text(child.effectiveConstraint) || (before?.limit ?? ""),
                        fields: child.tag === "attribute" ? fieldsOf(child) : [] };
        merged.set(`${child.tag}:${child.name}`, entry);
    }
    return [...merged.values()];
};
const elements = (cluster, tag, extra) => children(cluster).filter(child => child.tag === tag)
    .map(child => ({ id: child.id, name: child.name, conformance: child.conformance, ...extra(child) }));

const clusters = Matter.clusters.filter(cluster => cluster.id !== undefined).map(cluster => ({
    id: cluster.id, name: cluster.name, revision: cluster.revision,
    features: (children(cluster).find(child => child.name === "FeatureMap")?.children ?? [])
        .map(f => ({ name: f.name, title: f.title ?? "", bit: Number(text(f.constraint)), conformance: text(f.conformance) })),
    attributes: elements(cluster, "attribute", child => ({ type: child.type, constraint: child.limit,
                                                            fields: child.fields })),
    commands: elements(cluster, "command", child => ({ direction: child.direction })),
    events: elements(cluster, "event", () => ({})),
}));

const deviceTypes = Matter.deviceTypes.filter(type => type.id !== undefined).map(type => ({
    id: type.id, name: type.name, revision: type.revision, classification: type.classification ?? "",
    requirements: (type.requirements ?? type.children).map(r => ({
        element: r.element, name: r.name, id: r.id ?? null, conformance: text(r.conformance),
        children: (r.children ?? []).map(c => ({ element: c.element, name: c.name, conformance: text(c.conformance) })),
    })),
}));

process.stdout.write(JSON.stringify({ clusters, deviceTypes }));
