// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/graphql/backend_ai_schema.h"

namespace bai::graphql {
namespace {

// Resource presets, resource groups with their associations, and modify_agent (24.09's
// resource_preset.py, scaling_group.py, agent.py).
void AddResources(Schema& s) {
  s.Object("ResourcePreset",
           {"name: String", "resource_slots: JSONString", "shared_memory: BigInt"});
  s.Input("CreateResourcePresetInput", {"resource_slots: JSONString!", "shared_memory: String"});
  s.Input("ModifyResourcePresetInput", {"resource_slots: JSONString", "shared_memory: String"});
  s.Input("CreateScalingGroupInput", {
                                         "description: String = \"\"",
                                         "is_active: Boolean = true",
                                         "is_public: Boolean = true",
                                         "wsproxy_addr: String",
                                         "wsproxy_api_token: String",
                                         "driver: String!",
                                         "driver_opts: JSONString = \"{}\"",
                                         "scheduler: String!",
                                         "scheduler_opts: JSONString = \"{}\"",
                                         "use_host_network: Boolean = false",
                                     });
  s.Input("ModifyScalingGroupInput", {
                                         "description: String",
                                         "is_active: Boolean",
                                         "is_public: Boolean",
                                         "wsproxy_addr: String",
                                         "wsproxy_api_token: String",
                                         "driver: String",
                                         "driver_opts: JSONString",
                                         "scheduler: String",
                                         "scheduler_opts: JSONString",
                                         "use_host_network: Boolean",
                                     });
  s.Input("ModifyAgentInput", {"schedulable: Boolean", "scaling_group: String"});
  s.Object("CreateResourcePreset",
           {"ok: Boolean", "msg: String", "resource_preset: ResourcePreset"});
  s.Object("CreateScalingGroup", {"ok: Boolean", "msg: String", "scaling_group: ScalingGroup"});
  std::vector<std::string> mutations = {
      "create_resource_preset(name: String!, props: CreateResourcePresetInput!): "
      "CreateResourcePreset",
      "modify_resource_preset(name: String!, props: ModifyResourcePresetInput!): OkMsg",
      "delete_resource_preset(name: String!): OkMsg",
      "create_scaling_group(name: String!, props: CreateScalingGroupInput!): CreateScalingGroup",
      "modify_scaling_group(name: String!, props: ModifyScalingGroupInput!): OkMsg",
      "delete_scaling_group(name: String!): OkMsg",
      "associate_scaling_group_with_domain(scaling_group: String!, domain: String!): OkMsg",
      "disassociate_scaling_group_with_domain(scaling_group: String!, domain: String!): OkMsg",
      "associate_scaling_group_with_user_group(scaling_group: String!, user_group: UUID!): OkMsg",
      "disassociate_scaling_group_with_user_group(scaling_group: String!, user_group: UUID!): "
      "OkMsg",
      "associate_scaling_group_with_keypair(scaling_group: String!, access_key: String!): OkMsg",
      "disassociate_scaling_group_with_keypair(scaling_group: String!, access_key: String!): "
      "OkMsg",
      "associate_scaling_groups_with_domain(scaling_groups: [String]!, domain: String!): OkMsg",
      "disassociate_scaling_groups_with_domain(scaling_groups: [String]!, domain: String!): "
      "OkMsg",
      "associate_scaling_groups_with_user_group(scaling_groups: [String]!, user_group: UUID!): "
      "OkMsg",
      "disassociate_scaling_groups_with_user_group(scaling_groups: [String]!, "
      "user_group: UUID!): OkMsg",
      "associate_scaling_groups_with_keypair(scaling_groups: [String]!, access_key: String!): "
      "OkMsg",
      "disassociate_scaling_groups_with_keypair(scaling_groups: [String]!, "
      "access_key: String!): OkMsg",
      "disassociate_all_scaling_groups_with_domain(domain: String!): OkMsg",
      "disassociate_all_scaling_groups_with_group(user_group: UUID!): OkMsg",
      "modify_agent(id: String!, props: ModifyAgentInput!): OkMsg",
      "alias_image(alias: String!, target: String!, architecture: String = \"x86_64\"): "
      "OkMsg",
      "dealias_image(alias: String!, architecture: String = \"x86_64\"): OkMsg",
      "rescan_images(registry: String): RescanImages",
      "forget_image(reference: String!, architecture: String = \"x86_64\"): ForgetImage",
      "forget_image_by_id(image_id: String!): ForgetImage",
      "clear_images(registry: String): OkMsg",
      // 25.4's (keys and options as 25.6 has them).
      "purge_images(keys: [PurgeImagesKey]!, options: PurgeImagesOptions): PurgeImagesPayload",
  };
  s.Object("OkMsg", {"ok: Boolean", "msg: String"});
  s.Object("RescanImages", {"ok: Boolean", "msg: String", "task_id: UUID"});
  // 24.09's `image` is an ImageNode; bai answers its Image.
  s.Object("ForgetImage", {"ok: Boolean", "msg: String", "image: Image"});
  s.Input("ImageRefType", {"name: String!", "registry: String", "architecture: String"});
  s.Input("PurgeImagesKey", {"agent_id: String!", "images: [ImageRefType]!"});
  s.Input("PurgeImagesOptions", {"force: Boolean", "noprune: Boolean"});
  s.Object("PurgeImagesPayload", {"task_id: String"});
  s.Extend("Mutations", mutations);
}

// Container registries (24.09's container_registry.py: the legacy ContainerRegistry by
// hostname, "deprecated since 24.09.0", and ContainerRegistryNode by id).
void AddRegistries(Schema& s) {
  std::vector<std::string> config = {"url: String",       "type: String",     "project: [String]",
                                     "username: String",  "password: String", "ssl_verify: Boolean",
                                     "is_global: Boolean"};
  s.Object("ContainerRegistryConfig", config);
  s.Object("ContainerRegistry", {"id: ID", "hostname: String", "config: ContainerRegistryConfig"});
  s.Object("ContainerRegistryNode",
           {"id: ID", "row_id: UUID", "name: String", "url: String", "type: String",
            "registry_name: String", "is_global: Boolean", "project: String", "username: String",
            "password: String", "ssl_verify: Boolean", "extra: JSONString"});
  s.Object("ContainerRegistryNodeEdge", {"node: ContainerRegistryNode", "cursor: String"});
  s.Object("PageInfo", {"hasNextPage: Boolean", "hasPreviousPage: Boolean", "startCursor: String",
                        "endCursor: String"});
  s.Object("ContainerRegistryConnection",
           {"count: Int", "edges: [ContainerRegistryNodeEdge]", "pageInfo: PageInfo"});
  s.Input("CreateContainerRegistryInput",
          {"url: String!", "type: String!", "project: [String]", "username: String",
           "password: String", "ssl_verify: Boolean", "is_global: Boolean"});
  s.Input("ModifyContainerRegistryInput",
          {"url: String", "type: String", "project: [String]", "username: String",
           "password: String", "ssl_verify: Boolean", "is_global: Boolean"});
  s.Object("CreateContainerRegistry", {"container_registry: ContainerRegistry"});
  s.Object("ModifyContainerRegistry", {"container_registry: ContainerRegistry"});
  s.Object("DeleteContainerRegistry", {"container_registry: ContainerRegistry"});
  s.Object("CreateContainerRegistryNode", {"container_registry: ContainerRegistryNode"});
  s.Object("ModifyContainerRegistryNode", {"container_registry: ContainerRegistryNode"});
  s.Object("DeleteContainerRegistryNode", {"container_registry: ContainerRegistryNode"});
  std::string node_args =
      "is_global: Boolean, project: String, username: String, password: String, "
      "ssl_verify: Boolean, extra: JSONString";
  s.Extend("Mutations",
           {"create_container_registry(hostname: String!, props: CreateContainerRegistryInput!): "
            "CreateContainerRegistry",
            "modify_container_registry(hostname: String!, props: ModifyContainerRegistryInput!): "
            "ModifyContainerRegistry",
            "delete_container_registry(hostname: String!): DeleteContainerRegistry",
            "create_container_registry_node(url: String!, type: String!, registry_name: String!, " +
                node_args + "): CreateContainerRegistryNode",
            "modify_container_registry_node(id: String!, url: String, type: String, "
            "registry_name: String, " +
                node_args + "): ModifyContainerRegistryNode",
            "delete_container_registry_node(id: String!): DeleteContainerRegistryNode"});
  s.Extend("Query",
           {"container_registry(hostname: String!): ContainerRegistry",
            "container_registries: [ContainerRegistry]",
            "container_registry_node(id: String!): ContainerRegistryNode",
            "container_registry_nodes(filter: String, order: String, offset: Int, before: String, "
            "after: String, first: Int, last: Int): ContainerRegistryConnection"});
}

// Users, keypairs and the three kinds of resource policies (24.09's models/user.py,
// keypair.py, resource_policy.py), with their inputs and payloads.
void AddPrincipals(Schema& s) {
  s.Object("UserGroup", {"id: UUID", "name: String"});
  s.Object("User", {
                       "id: ID",
                       "uuid: UUID",
                       "username: String",
                       "email: String",
                       "need_password_change: Boolean",
                       "full_name: String",
                       "description: String",
                       "is_active: Boolean",
                       "status: String",
                       "status_info: String",
                       "created_at: DateTime",
                       "modified_at: DateTime",
                       "domain_name: String",
                       "role: String",
                       "resource_policy: String",
                       "allowed_client_ip: [String]",
                       "totp_activated: Boolean",
                       "sudo_session_enabled: Boolean",
                       "main_access_key: String",
                       "groups: [UserGroup]",
                   });
  s.Object("UserList", {"items: [User]!", "total_count: Int!"});
  s.Object("KeyPairList", {"items: [KeyPair]!", "total_count: Int!"});
  // 22.03's client leaves username and need_password_change out; 24.09 requires them.
  s.Input("UserInput", {
                           "username: String",
                           "password: String!",
                           "need_password_change: Boolean = false",
                           "full_name: String = \"\"",
                           "description: String = \"\"",
                           "is_active: Boolean",
                           "status: String",
                           "domain_name: String = \"default\"",
                           "role: String = \"user\"",
                           "group_ids: [String]",
                           "allowed_client_ip: [String]",
                           "totp_activated: Boolean = false",
                           "resource_policy: String = \"default\"",
                           "sudo_session_enabled: Boolean = false",
                       });
  s.Input("ModifyUserInput", {
                                 "username: String",
                                 "password: String",
                                 "need_password_change: Boolean",
                                 "full_name: String",
                                 "description: String",
                                 "is_active: Boolean",
                                 "status: String",
                                 "domain_name: String",
                                 "role: String",
                                 "group_ids: [String]",
                                 "allowed_client_ip: [String]",
                                 "totp_activated: Boolean",
                                 "resource_policy: String",
                                 "sudo_session_enabled: Boolean",
                                 "main_access_key: String",
                             });
  s.Input("PurgeUserInput", {"purge_shared_vfolders: Boolean = false"});
  s.Input("KeyPairInput", {
                              "is_active: Boolean = true",
                              "is_admin: Boolean = false",
                              "resource_policy: String!",
                              "concurrency_limit: Int",
                              "rate_limit: Int!",
                          });
  s.Input("ModifyKeyPairInput", {
                                    "is_active: Boolean",
                                    "is_admin: Boolean",
                                    "resource_policy: String",
                                    "concurrency_limit: Int",
                                    "rate_limit: Int",
                                });
  s.Object("KeyPairResourcePolicy", {
                                        "name: String",
                                        "created_at: DateTime",
                                        "default_for_unspecified: String",
                                        "total_resource_slots: JSONString",
                                        "max_session_lifetime: Int",
                                        "max_concurrent_sessions: Int",
                                        "max_concurrent_sftp_sessions: Int",
                                        "max_containers_per_session: Int",
                                        "idle_timeout: BigInt",
                                        "allowed_vfolder_hosts: JSONString",
                                        "max_pending_session_count: Int",
                                        "max_pending_session_resource_slots: JSONString",
                                        "max_vfolder_count: Int",
                                        "max_vfolder_size: BigInt",
                                        "max_quota_scope_size: BigInt",
                                    });
  // One input shape for create and modify: 22.03's client sends every field (null when not
  // given); a create without a value takes the column's default.
  std::vector<std::string> keypair_policy_input = {
      "default_for_unspecified: String",
      "total_resource_slots: JSONString",
      "max_session_lifetime: Int",
      "max_concurrent_sessions: Int",
      "max_concurrent_sftp_sessions: Int",
      "max_containers_per_session: Int",
      "idle_timeout: BigInt",
      "allowed_vfolder_hosts: JSONString",
      "max_pending_session_count: Int",
      "max_pending_session_resource_slots: JSONString",
      "max_vfolder_count: Int",
      "max_vfolder_size: BigInt",
      "max_quota_scope_size: BigInt",
  };
  s.Input("CreateKeyPairResourcePolicyInput", keypair_policy_input);
  s.Input("ModifyKeyPairResourcePolicyInput", keypair_policy_input);
  s.Object("UserResourcePolicy", {
                                     "name: String",
                                     "created_at: DateTime",
                                     "max_vfolder_count: Int",
                                     "max_quota_scope_size: BigInt",
                                     "max_session_count_per_model_session: Int",
                                     "max_customized_image_count: Int",
                                 });
  std::vector<std::string> user_policy_input = {
      "max_vfolder_count: Int",
      "max_quota_scope_size: BigInt",
      "max_session_count_per_model_session: Int",
      "max_customized_image_count: Int",
  };
  s.Input("CreateUserResourcePolicyInput", user_policy_input);
  s.Input("ModifyUserResourcePolicyInput", user_policy_input);
  s.Object("ProjectResourcePolicy", {
                                        "name: String",
                                        "created_at: DateTime",
                                        "max_vfolder_count: Int",
                                        "max_quota_scope_size: BigInt",
                                    });
  std::vector<std::string> project_policy_input = {"max_vfolder_count: Int",
                                                   "max_quota_scope_size: BigInt"};
  s.Input("CreateProjectResourcePolicyInput", project_policy_input);
  s.Input("ModifyProjectResourcePolicyInput", project_policy_input);
  s.Object("CreateUser", {"ok: Boolean", "msg: String", "user: User"});
  s.Object("ModifyUser", {"ok: Boolean", "msg: String", "user: User"});
  s.Object("CreateKeyPair", {"ok: Boolean", "msg: String", "keypair: KeyPair"});
  for (char const* name :
       {"DeleteUser", "PurgeUser", "ModifyKeyPair", "DeleteKeyPair", "ModifyKeyPairResourcePolicy",
        "DeleteKeyPairResourcePolicy", "ModifyUserResourcePolicy", "DeleteUserResourcePolicy",
        "ModifyProjectResourcePolicy", "DeleteProjectResourcePolicy"}) {
    s.Object(name, {"ok: Boolean", "msg: String"});
  }
  s.Object("CreateKeyPairResourcePolicy",
           {"ok: Boolean", "msg: String", "resource_policy: KeyPairResourcePolicy"});
  s.Object("CreateUserResourcePolicy",
           {"ok: Boolean", "msg: String", "resource_policy: UserResourcePolicy"});
  s.Object("CreateProjectResourcePolicy",
           {"ok: Boolean", "msg: String", "resource_policy: ProjectResourcePolicy"});
}

Schema Build() {
  Schema s;
  s.Object("Query",
           {
               "compute_session(id: UUID!): ComputeSession",
               "compute_session_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, group_id: String, access_key: String, status: String): "
               "ComputeSessionList",
               "compute_container(id: UUID!): ComputeContainer",
               "compute_container_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "session_id: ID!, role: String): ComputeContainerList",
               "keypair(domain_name: String, access_key: String): KeyPair",
               "image(id: String, reference: String, architecture: String = \"x86_64\"): Image",
               "images(is_installed: Boolean, is_operation: Boolean, load_filters: [String]): "
               "[Image]",
               "scaling_group(name: String): ScalingGroup",
               "scaling_groups(name: String, is_active: Boolean): [ScalingGroup]",
               "agent(agent_id: String!): Agent",
               "agents(scaling_group: String, status: String): [Agent]",
               "agent_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "scaling_group: String, status: String): AgentList",
               "storage_volume(id: String): StorageVolume",
               "storage_volume_list(limit: Int!, offset: Int!, filter: String, order: String): "
               "StorageVolumeList",
               "vfolder(id: String): VirtualFolder",
               "vfolder_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, group_id: UUID, access_key: String): VirtualFolderList",
               "vfolder_own_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, access_key: String): VirtualFolderList",
               "vfolder_invited_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, access_key: String): VirtualFolderList",
               "vfolder_project_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, access_key: String): VirtualFolderList",
               "domain(name: String): Domain",
               "domains(is_active: Boolean): [Domain]",
               "group(id: UUID!, domain_name: String): Group",
               "groups(domain_name: String, is_active: Boolean): [Group]",
               "groups_by_name(name: String!, domain_name: String): [Group]",
               "user(domain_name: String, email: String): User",
               "user_from_uuid(domain_name: String, user_id: ID): User",
               "users(domain_name: String, group_id: UUID, is_active: Boolean, status: String): "
               "[User]",
               "user_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, group_id: UUID, is_active: Boolean, status: String): "
               "UserList",
               "keypairs(domain_name: String, email: String, is_active: Boolean): [KeyPair]",
               "keypair_list(limit: Int!, offset: Int!, filter: String, order: String, "
               "domain_name: String, email: String, is_active: Boolean): KeyPairList",
               "keypair_resource_policy(name: String): KeyPairResourcePolicy",
               "keypair_resource_policies: [KeyPairResourcePolicy]",
               "user_resource_policy(name: String): UserResourcePolicy",
               "user_resource_policies: [UserResourcePolicy]",
               "project_resource_policy(name: String!): ProjectResourcePolicy",
               "project_resource_policies: [ProjectResourcePolicy]",
               "resource_preset(name: String!): ResourcePreset",
               "resource_presets: [ResourcePreset]",
               "scaling_groups_for_domain(domain: String!, is_active: Boolean): [ScalingGroup]",
               "scaling_groups_for_user_group(user_group: String!, is_active: Boolean): "
               "[ScalingGroup]",
               "scaling_groups_for_keypair(access_key: String!, is_active: Boolean): "
               "[ScalingGroup]",
           });
  // Administration (streams-admin-console.md §B.2): classic mutations answering {ok, msg, …}.
  s.mutation_type = "Mutations";
  s.Object("Mutations", {
                            "create_domain(name: String!, props: DomainInput!): CreateDomain",
                            "modify_domain(name: String!, props: ModifyDomainInput!): ModifyDomain",
                            "delete_domain(name: String!): DeleteDomain",
                            "purge_domain(name: String!): PurgeDomain",
                            "create_group(name: String!, props: GroupInput!): CreateGroup",
                            "modify_group(gid: UUID!, props: ModifyGroupInput!): ModifyGroup",
                            "delete_group(gid: UUID!): DeleteGroup",
                            "purge_group(gid: UUID!): PurgeGroup",
                            "create_user(email: String!, props: UserInput!): CreateUser",
                            "modify_user(email: String!, props: ModifyUserInput!): ModifyUser",
                            "delete_user(email: String!): DeleteUser",
                            "purge_user(email: String!, props: PurgeUserInput!): PurgeUser",
                            "create_keypair(user_id: String!, props: KeyPairInput!): "
                            "CreateKeyPair",
                            "modify_keypair(access_key: String!, props: ModifyKeyPairInput!): "
                            "ModifyKeyPair",
                            "delete_keypair(access_key: String!): DeleteKeyPair",
                            "create_keypair_resource_policy(name: String!, "
                            "props: CreateKeyPairResourcePolicyInput!): "
                            "CreateKeyPairResourcePolicy",
                            "modify_keypair_resource_policy(name: String!, "
                            "props: ModifyKeyPairResourcePolicyInput!): "
                            "ModifyKeyPairResourcePolicy",
                            "delete_keypair_resource_policy(name: String!): "
                            "DeleteKeyPairResourcePolicy",
                            "create_user_resource_policy(name: String!, "
                            "props: CreateUserResourcePolicyInput!): CreateUserResourcePolicy",
                            "modify_user_resource_policy(name: String!, "
                            "props: ModifyUserResourcePolicyInput!): ModifyUserResourcePolicy",
                            "delete_user_resource_policy(name: String!): "
                            "DeleteUserResourcePolicy",
                            "create_project_resource_policy(name: String!, "
                            "props: CreateProjectResourcePolicyInput!): "
                            "CreateProjectResourcePolicy",
                            "modify_project_resource_policy(name: String!, "
                            "props: ModifyProjectResourcePolicyInput!): "
                            "ModifyProjectResourcePolicy",
                            "delete_project_resource_policy(name: String!): "
                            "DeleteProjectResourcePolicy",
                        });
  AddPrincipals(s);
  AddResources(s);
  AddRegistries(s);
  s.Object("Domain", {
                         "name: String",
                         "description: String",
                         "is_active: Boolean",
                         "created_at: DateTime",
                         "modified_at: DateTime",
                         "total_resource_slots: JSONString",
                         "allowed_vfolder_hosts: JSONString",
                         "allowed_docker_registries: [String]",
                         "integration_id: String",
                         "scaling_groups: [String]",
                     });
  // 22.03's client sends allowed_vfolder_hosts as a list, 24.09's as an object: JSONString
  // takes either.
  s.Input("DomainInput", {
                             "description: String = \"\"",
                             "is_active: Boolean = true",
                             "total_resource_slots: JSONString = \"{}\"",
                             "allowed_vfolder_hosts: JSONString = \"{}\"",
                             "allowed_docker_registries: [String] = []",
                             "integration_id: String",
                         });
  s.Input("ModifyDomainInput", {
                                   "name: String",
                                   "description: String",
                                   "is_active: Boolean",
                                   "total_resource_slots: JSONString",
                                   "allowed_vfolder_hosts: JSONString",
                                   "allowed_docker_registries: [String]",
                                   "integration_id: String",
                               });
  s.Object("Group", {
                        "id: UUID",
                        "name: String",
                        "description: String",
                        "is_active: Boolean",
                        "created_at: DateTime",
                        "modified_at: DateTime",
                        "domain_name: String",
                        "type: String",
                        "total_resource_slots: JSONString",
                        "allowed_vfolder_hosts: JSONString",
                        "integration_id: String",
                        "resource_policy: String",
                        "scaling_groups: [String]",
                    });
  s.Input("GroupInput", {
                            "type: String = \"GENERAL\"",
                            "description: String = \"\"",
                            "is_active: Boolean = true",
                            "domain_name: String!",
                            "total_resource_slots: JSONString = \"{}\"",
                            "allowed_vfolder_hosts: JSONString = \"{}\"",
                            "integration_id: String = \"\"",
                            "resource_policy: String = \"default\"",
                            "container_registry: JSONString",
                        });
  s.Input("ModifyGroupInput", {
                                  "name: String",
                                  "description: String",
                                  "is_active: Boolean",
                                  "domain_name: String",
                                  "total_resource_slots: JSONString",
                                  "user_update_mode: String",
                                  "user_uuids: [String]",
                                  "allowed_vfolder_hosts: JSONString",
                                  "integration_id: String",
                                  "resource_policy: String",
                                  "container_registry: JSONString",
                              });
  s.Object("CreateGroup", {"ok: Boolean", "msg: String", "group: Group"});
  s.Object("ModifyGroup", {"ok: Boolean", "msg: String", "group: Group"});
  s.Object("DeleteGroup", {"ok: Boolean", "msg: String"});
  s.Object("PurgeGroup", {"ok: Boolean", "msg: String"});
  s.Object("CreateDomain", {"ok: Boolean", "msg: String", "domain: Domain"});
  s.Object("ModifyDomain", {"ok: Boolean", "msg: String", "domain: Domain"});
  s.Object("DeleteDomain", {"ok: Boolean", "msg: String"});
  s.Object("PurgeDomain", {"ok: Boolean", "msg: String"});
  s.Object("VirtualFolder", {
                                "id: UUID",
                                "host: String",
                                "quota_scope_id: String",
                                "name: String",
                                "user: UUID",
                                "user_email: String",
                                "group: UUID",
                                "group_name: String",
                                "creator: String",
                                "domain_name: String",
                                "unmanaged_path: String",
                                "usage_mode: String",
                                "permission: String",
                                "ownership_type: String",
                                "max_files: Int",
                                "max_size: BigInt",
                                "created_at: DateTime",
                                "last_used: DateTime",
                                "num_files: Int",
                                "cur_size: BigInt",
                                "cloneable: Boolean",
                                "status: String",
                            });
  s.Object("StorageVolume", {
                                "id: ID",
                                "backend: String",
                                "fsprefix: String",
                                "path: String",
                                "capabilities: [String]",
                                "hardware_metadata: JSONString",
                                "performance_metric: JSONString",
                                "usage: JSONString",
                                "proxy: String",
                                "name: String",
                            });
  s.Object("StorageVolumeList", {"items: [StorageVolume]!", "total_count: Int!"});
  s.Object("VirtualFolderList", {"items: [VirtualFolder]!", "total_count: Int!"});
  s.Object("ComputeSession",
           {
               "id: UUID",
               "session_id: UUID",
               "main_kernel_id: UUID",
               "tag: String",
               "name: String",
               "type: String",
               "main_kernel_role: String",
               "priority: Int",
               "image: String",
               "architecture: String",
               "registry: String",
               "cluster_template: String",
               "cluster_mode: String",
               "cluster_size: Int",
               "domain_name: String",
               "group_name: String",
               "group_id: UUID",
               "user_email: String",
               "full_name: String",
               "user_id: UUID",
               "access_key: String",
               "created_user_email: String",
               "created_user_id: UUID",
               "status: String",
               "status_changed: DateTime",
               "status_info: String",
               "status_data: JSONString",
               "status_history: JSONString",
               "created_at: DateTime",
               "terminated_at: DateTime",
               "starts_at: DateTime",
               "scheduled_at: DateTime",
               "startup_command: String",
               "result: String",
               "commit_status: String",
               "abusing_reports: [JSONString]",
               "idle_checks: JSONString",
               "agent_ids: [String]",
               "resource_opts: JSONString",
               "scaling_group: String",
               "service_ports: JSONString",
               "mounts: [String]",
               "vfolder_mounts: [String]",
               "occupying_slots: JSONString",
               "occupied_slots: JSONString",
               "requested_slots: JSONString",
               "num_queries: BigInt",
               "containers: [ComputeContainer]",
               "dependencies: [ComputeSession]",
               "inference_metrics: JSONString",
               // bai's addition: a batch job's exit code once it has ended (null before).
               "exit_code: Int",
           });
  s.Object("ComputeSessionList", {"items: [ComputeSession]!", "total_count: Int!"});
  s.Object("ComputeContainer", {
                                   "id: UUID",
                                   "idx: Int",
                                   "role: String",
                                   "hostname: String",
                                   "kernel_id: UUID",
                                   "cluster_idx: Int",
                                   "local_rank: Int",
                                   "cluster_role: String",
                                   "cluster_hostname: String",
                                   "session_id: UUID",
                                   "image: String",
                                   "architecture: String",
                                   "registry: String",
                                   "status: String",
                                   "status_changed: DateTime",
                                   "status_info: String",
                                   "status_data: JSONString",
                                   "created_at: DateTime",
                                   "terminated_at: DateTime",
                                   "starts_at: DateTime",
                                   "scheduled_at: DateTime",
                                   "abusing_report: JSONString",
                                   "agent: String",
                                   "agent_addr: String",
                                   "container_id: String",
                                   "resource_opts: JSONString",
                                   "occupied_slots: JSONString",
                                   "live_stat: JSONString",
                                   "last_stat: JSONString",
                                   "preopen_ports: [Int]",
                                   // bai's addition: [{slot, uuid, amount}] per GPU it holds.
                                   "attached_devices: JSONString",
                               });
  s.Object("ComputeContainerList", {"items: [ComputeContainer]!", "total_count: Int!"});
  s.Object("UserInfo", {"email: String", "full_name: String"});
  s.Object("KeyPair", {
                          "id: ID",
                          "user_id: String",
                          "full_name: String",
                          "access_key: String",
                          "secret_key: String",
                          "is_active: Boolean",
                          "is_admin: Boolean",
                          "resource_policy: String",
                          "created_at: DateTime",
                          "modified_at: DateTime",
                          "last_used: DateTime",
                          "rate_limit: Int",
                          "num_queries: Int",
                          "user: UUID",
                          "projects: [String]",
                          "ssh_public_key: String",
                          "bootstrap_script: String",
                          "concurrency_used: Int",
                          "concurrency_limit: Int",
                          "user_info: UserInfo",
                          "compute_sessions(status: String): [ComputeSession]",
                      });
  s.Object("KVPair", {"key: String", "value: String"});
  s.Object("ResourceLimit", {"key: String", "min: String", "max: String"});
  s.Object("Image", {
                        "id: UUID",
                        "name: String",
                        "project: String",
                        "humanized_name: String",
                        "tag: String",
                        "registry: String",
                        "architecture: String",
                        "is_local: Boolean",
                        "digest: String",
                        "labels: [KVPair]",
                        "aliases: [String]",
                        "size_bytes: BigInt",
                        "resource_limits: [ResourceLimit]",
                        "supported_accelerators: [String]",
                        "installed: Boolean",
                        "installed_agents: [String]",
                        "hash: String",
                    });
  s.Object("ScalingGroup",
           {
               "name: String",
               "description: String",
               "is_active: Boolean",
               "is_public: Boolean",
               "created_at: DateTime",
               "wsproxy_addr: String",
               "wsproxy_api_token: String",
               "driver: String",
               "driver_opts: JSONString",
               "scheduler: String",
               "scheduler_opts: JSONString",
               "use_host_network: Boolean",
               "agent_count_by_status(status: String = \"ALIVE\"): Int",
               "agent_total_resource_slots_by_status(status: String = \"ALIVE\"): JSONString",
           });
  s.Object("Agent", {
                        "id: ID",
                        "status: String",
                        "status_changed: DateTime",
                        "region: String",
                        "scaling_group: String",
                        "schedulable: Boolean",
                        "available_slots: JSONString",
                        "occupied_slots: JSONString",
                        "addr: String",
                        "architecture: String",
                        "first_contact: DateTime",
                        "lost_at: DateTime",
                        "live_stat: JSONString",
                        "version: String",
                        "compute_plugins: JSONString",
                        "hardware_metadata: JSONString",
                        "auto_terminate_abusing_kernel: Boolean",
                        "local_config: JSONString",
                        "container_count: Int",
                        "cpu_cur_pct: Float",
                        "mem_cur_bytes: Float",
                        "compute_containers(status: String): [ComputeContainer]",
                        "devices: JSONString",
                    });
  s.Object("AgentList", {"items: [Agent]!", "total_count: Int!"});
  return s;
}

}  // namespace

Schema const& BackendAiSchema() {
  static Schema const* const kSchema = new Schema(Build());
  return *kSchema;
}

}  // namespace bai::graphql
